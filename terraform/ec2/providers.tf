# One provider for all datacenters: every regional resource and data source below sets
# `region` from var.datacenters, so the datacenter list is data (for_each), not six copies
# of a module behind six provider aliases.
provider "aws" {
  # Only a default; nothing in this configuration relies on it.
  region = "us-east-1"
}
