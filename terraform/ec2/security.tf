# Each datacenter's security group admits:
#   - SSH (22) from operator_cidr only;
#   - the server port range and ICMP echo (RTT verification) from the cluster's own
#     machines: every instance's public address (prefix lists of at most 100 /32s, the
#     same lists in every region) and the VPC's CIDR.
# Nothing else, and nothing from 0.0.0.0/0 or ::/0. The rules are standalone resources
# that reference the instances' addresses, so instances -> security group -> rules has
# no cycle.

resource "aws_security_group" "cluster" {
  for_each = var.datacenters
  region   = each.value

  #checkov:skip=CKV2_AWS_5:Attached to every instance of its datacenter (aws_instance.host, vpc_security_group_ids by each.value.dc); checkov's graph follows that for_each reference for one key only.
  name        = "${var.experiment_id}-cluster"
  description = "k2bench ${var.experiment_id} ${each.key}: cluster ports from cluster machines, SSH from the operator"
  vpc_id      = aws_vpc.this[each.key].id

  tags = merge(local.tags, { Name = "${var.experiment_id}-${lower(each.key)}-cluster" })
}

# Every machine's public address, in every region: cross-region traffic arrives from
# public addresses, and so does same-VPC traffic sent to a public address. The machines
# are split into lists of at most 100 (local.prefix_lists): AWS takes at most 100 entries
# per CreateManagedPrefixList call, and the provider sends them all in one.
resource "aws_ec2_managed_prefix_list" "cluster" {
  for_each = local.prefix_lists
  region   = each.value.region

  name           = "${var.experiment_id}-cluster-${each.value.index}"
  address_family = "IPv4"
  max_entries    = each.value.max_entries

  dynamic "entry" {
    for_each = toset(each.value.hosts)
    content {
      cidr        = "${aws_instance.host[entry.key].public_ip}/32"
      description = entry.key
    }
  }

  tags = merge(local.tags, { Name = "${var.experiment_id}-${lower(each.value.dc)}-cluster-${each.value.index}" })
}

resource "aws_vpc_security_group_ingress_rule" "ssh" {
  for_each = var.datacenters
  region   = each.value

  security_group_id = aws_security_group.cluster[each.key].id
  description       = "SSH from the operator"
  cidr_ipv4         = var.operator_cidr
  ip_protocol       = "tcp"
  from_port         = 22
  to_port           = 22

  tags = merge(local.tags, { Name = "${var.experiment_id}-${lower(each.key)}-ssh" })
}

resource "aws_vpc_security_group_ingress_rule" "server_ports_cluster" {
  for_each = local.prefix_lists
  region   = each.value.region

  security_group_id = aws_security_group.cluster[each.value.dc].id
  description       = "k2bench server ports from the cluster machines in prefix list ${each.value.index}"
  prefix_list_id    = aws_ec2_managed_prefix_list.cluster[each.key].id
  ip_protocol       = "tcp"
  from_port         = var.server_ports.from
  to_port           = var.server_ports.to

  tags = merge(local.tags, { Name = "${var.experiment_id}-${lower(each.value.dc)}-server-ports-cluster-${each.value.index}" })
}

resource "aws_vpc_security_group_ingress_rule" "server_ports_vpc" {
  for_each = var.datacenters
  region   = each.value

  security_group_id = aws_security_group.cluster[each.key].id
  description       = "k2bench server ports from this datacenter's VPC"
  cidr_ipv4         = aws_vpc.this[each.key].cidr_block
  ip_protocol       = "tcp"
  from_port         = var.server_ports.from
  to_port           = var.server_ports.to

  tags = merge(local.tags, { Name = "${var.experiment_id}-${lower(each.key)}-server-ports-vpc" })
}

resource "aws_vpc_security_group_ingress_rule" "icmp_echo_cluster" {
  for_each = local.prefix_lists
  region   = each.value.region

  security_group_id = aws_security_group.cluster[each.value.dc].id
  description       = "ICMP echo request from the cluster machines in prefix list ${each.value.index} (RTT verification)"
  prefix_list_id    = aws_ec2_managed_prefix_list.cluster[each.key].id
  ip_protocol       = "icmp"
  from_port         = 8 # ICMP type: echo request
  to_port           = 0 # ICMP code

  tags = merge(local.tags, { Name = "${var.experiment_id}-${lower(each.value.dc)}-icmp-echo-cluster-${each.value.index}" })
}

resource "aws_vpc_security_group_ingress_rule" "icmp_echo_vpc" {
  for_each = var.datacenters
  region   = each.value

  security_group_id = aws_security_group.cluster[each.key].id
  description       = "ICMP echo request from this datacenter's VPC (RTT verification)"
  cidr_ipv4         = aws_vpc.this[each.key].cidr_block
  ip_protocol       = "icmp"
  from_port         = 8 # ICMP type: echo request
  to_port           = 0 # ICMP code

  tags = merge(local.tags, { Name = "${var.experiment_id}-${lower(each.key)}-icmp-echo-vpc" })
}

# Egress is open: the machines install packages (apt, the JDK, Maven artifacts) and open
# connections to peers in five other regions on ports chosen at run time; inbound stays
# closed whatever they send, and replies to admitted connections pass anyway (stateful).
resource "aws_vpc_security_group_egress_rule" "all" {
  for_each = var.datacenters
  region   = each.value

  #checkov:skip=CKV_AWS_382:Egress to anywhere is needed (packages, peers in other regions); see the comment above.
  security_group_id = aws_security_group.cluster[each.key].id
  description       = "All outbound traffic"
  cidr_ipv4         = "0.0.0.0/0"
  ip_protocol       = "-1"

  tags = merge(local.tags, { Name = "${var.experiment_id}-${lower(each.key)}-egress" })
}
