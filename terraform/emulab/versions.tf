terraform {
  # terraform_data (built in) needs 1.4; 1.5 is the floor across k2bench's configurations.
  required_version = ">= 1.5"

  required_providers {
    local = {
      source  = "hashicorp/local"
      version = "~> 2.5"
    }
  }
}
