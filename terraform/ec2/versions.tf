terraform {
  # Nothing newer than 1.5 is used: each validation refers only to its own variable.
  required_version = ">= 1.5"

  required_providers {
    # 6.x: every regional resource takes its own `region` (enhanced region support).
    aws = {
      source  = "hashicorp/aws"
      version = "~> 6.0"
    }
    local = {
      source  = "hashicorp/local"
      version = "~> 2.5"
    }
  }
}
