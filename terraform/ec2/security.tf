# Each datacenter's security group admits:
#   - SSH (22) from operator_cidr only;
#   - the server port range and ICMP echo (RTT verification) from the cluster's own
#     machines: every instance's public address (a prefix list, one /32 per machine, in
#     every region) and the VPC's CIDR.
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

  lifecycle {
    precondition {
      condition     = local.inbound_rules_per_security_group <= var.security_group_rule_quota
      error_message = "${length(local.host_list)} machines need ${local.inbound_rules_per_security_group} inbound rules per security group (each prefix-list rule counts one per machine), above security_group_rule_quota = ${var.security_group_rule_quota}: request 'Inbound or outbound rules per security group' (L-0EA8095F) >= ${local.inbound_rules_per_security_group} in every region in Service Quotas and set security_group_rule_quota, or use fewer machines."
    }
  }
}

# Every machine's public address, in every region: cross-region traffic arrives from
# public addresses, and so does same-VPC traffic sent to a public address.
resource "aws_ec2_managed_prefix_list" "cluster" {
  for_each = var.datacenters
  region   = each.value

  name           = "${var.experiment_id}-cluster"
  address_family = "IPv4"
  max_entries    = length(local.host_list)

  dynamic "entry" {
    for_each = local.hosts
    content {
      cidr        = "${aws_instance.host[entry.key].public_ip}/32"
      description = entry.key
    }
  }

  tags = merge(local.tags, { Name = "${var.experiment_id}-${lower(each.key)}-cluster" })
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
  for_each = var.datacenters
  region   = each.value

  security_group_id = aws_security_group.cluster[each.key].id
  description       = "k2bench server ports from every cluster machine"
  prefix_list_id    = aws_ec2_managed_prefix_list.cluster[each.key].id
  ip_protocol       = "tcp"
  from_port         = var.server_ports.from
  to_port           = var.server_ports.to

  tags = merge(local.tags, { Name = "${var.experiment_id}-${lower(each.key)}-server-ports-cluster" })
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
  for_each = var.datacenters
  region   = each.value

  security_group_id = aws_security_group.cluster[each.key].id
  description       = "ICMP echo request from every cluster machine (RTT verification)"
  prefix_list_id    = aws_ec2_managed_prefix_list.cluster[each.key].id
  ip_protocol       = "icmp"
  from_port         = 8 # ICMP type: echo request
  to_port           = 0 # ICMP code

  tags = merge(local.tags, { Name = "${var.experiment_id}-${lower(each.key)}-icmp-echo-cluster" })
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
