# One provider for all datacenters: every regional resource and data source below sets
# `region` from var.datacenters, so the datacenter list is data (for_each), not six copies
# of a module behind six provider aliases.
provider "aws" {
  # The regional resources name their own regions. The Price List API (global to the
  # provider, so without `region`) answers only in us-east-1 and a few other regions:
  # aws_pricing_product relies on this one.
  region = "us-east-1"
}
