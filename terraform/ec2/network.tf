# One VPC per datacenter with one public subnet: the machines of a datacenter share a
# zone, and datacenters talk over the internet, as the paper's deployment did.

resource "aws_vpc" "this" {
  for_each = var.datacenters
  region   = each.value

  #checkov:skip=CKV2_AWS_11:A benchmark VPC lives for hours and carries only the cluster's own traffic; flow logs would add a log group, an IAM role and cost per GB of benchmark traffic.
  cidr_block           = var.vpc_cidr
  enable_dns_support   = true
  enable_dns_hostnames = true

  tags = merge(local.tags, { Name = "${var.experiment_id}-${lower(each.key)}" })

  # Everything else hangs off the VPCs: nothing is created before the quota and deadline
  # checks have passed (plan checks them already; this holds should a value be unknown then).
  depends_on = [terraform_data.quota_check, terraform_data.deadline_check]
}

# Takes over the VPC's default security group and leaves it with no rules, so nothing
# that lands in it by mistake is reachable.
resource "aws_default_security_group" "this" {
  for_each = var.datacenters
  region   = each.value

  vpc_id = aws_vpc.this[each.key].id

  tags = merge(local.tags, { Name = "${var.experiment_id}-${lower(each.key)}-default-unused" })
}

resource "aws_internet_gateway" "this" {
  for_each = var.datacenters
  region   = each.value

  vpc_id = aws_vpc.this[each.key].id

  tags = merge(local.tags, { Name = "${var.experiment_id}-${lower(each.key)}" })
}

resource "aws_subnet" "public" {
  for_each = var.datacenters
  region   = each.value

  vpc_id            = aws_vpc.this[each.key].id
  cidr_block        = cidrsubnet(var.vpc_cidr, 4, 0)
  availability_zone = sort(data.aws_ec2_instance_type_offerings.this[each.key].locations)[0]
  # Instances ask for their public address themselves (associate_public_ip_address).
  map_public_ip_on_launch = false

  tags = merge(local.tags, { Name = "${var.experiment_id}-${lower(each.key)}-public" })
}

resource "aws_route_table" "public" {
  for_each = var.datacenters
  region   = each.value

  vpc_id = aws_vpc.this[each.key].id

  tags = merge(local.tags, { Name = "${var.experiment_id}-${lower(each.key)}-public" })
}

resource "aws_route" "internet" {
  for_each = var.datacenters
  region   = each.value

  route_table_id         = aws_route_table.public[each.key].id
  destination_cidr_block = "0.0.0.0/0"
  gateway_id             = aws_internet_gateway.this[each.key].id
}

resource "aws_route_table_association" "public" {
  for_each = var.datacenters
  region   = each.value

  subnet_id      = aws_subnet.public[each.key].id
  route_table_id = aws_route_table.public[each.key].id
}
