terraform {
  # 1.5: plantimestamp() (the deadline); each validation refers only to its own variable.
  required_version = ">= 1.5"

  # Exactly the releases whose schemas the offline checks read (../provider-schemas.txt,
  # ../README.md): what ec2-up installs is what was checked. Raise them together.
  required_providers {
    # 6.x: every regional resource takes its own `region` (enhanced region support).
    aws = {
      source  = "hashicorp/aws"
      version = "6.25.0"
    }
    local = {
      source  = "hashicorp/local"
      version = "2.6.1"
    }
    # ed25519 host keys (tls_private_key); ED25519 needs 4.0.
    tls = {
      source  = "hashicorp/tls"
      version = "4.1.0"
    }
  }
}
