data "aws_ami" "ubuntu" {
  for_each = var.datacenters
  region   = each.value

  most_recent = true
  owners      = ["099720109477"] # Canonical

  filter {
    name   = "name"
    values = ["ubuntu/images/*/ubuntu-jammy-22.04-amd64-server-*"]
  }

  filter {
    name   = "virtualization-type"
    values = ["hvm"]
  }
}

# Availability zones offering instance_type: not every zone of a region has every type.
data "aws_ec2_instance_type_offerings" "this" {
  for_each = var.datacenters
  region   = each.value

  location_type = "availability-zone"

  filter {
    name   = "instance-type"
    values = [var.instance_type]
  }

  lifecycle {
    postcondition {
      condition     = length(self.locations) > 0
      error_message = "instance_type ${var.instance_type} is not offered in ${each.value} (datacenter ${each.key}): choose another instance_type."
    }
  }
}

resource "aws_key_pair" "operator" {
  for_each = var.datacenters
  region   = each.value

  key_name   = "${var.experiment_id}-${lower(each.key)}"
  public_key = trimspace(var.ssh_public_key)

  tags = merge(local.tags, { Name = "${var.experiment_id}-${lower(each.key)}" })
}

# Each machine's SSH host key, generated here and installed by cloud-init (user_data), so
# known_hosts comes from Terraform's copy rather than from trusting a first connection.
# The private keys are in the Terraform state (and in each instance's user data).
resource "tls_private_key" "host" {
  for_each = local.hosts

  algorithm = "ED25519"
}

module "cloud_init" {
  source = "./modules/cloud-init"

  host_keys = {
    for name, key in tls_private_key.host : name => {
      private_key_openssh = key.private_key_openssh
      public_key_openssh  = key.public_key_openssh
    }
  }
  deadline = local.deadline
}

resource "aws_instance" "host" {
  for_each = local.hosts
  region   = each.value.region

  #checkov:skip=CKV_AWS_88:Servers in six regions reach each other over the internet (topology_address public); a public address per instance is the point, and its security group admits only the cluster and the operator.
  #checkov:skip=CKV2_AWS_41:The instances call no AWS API, so they get no IAM role (least privilege).
  ami                         = data.aws_ami.ubuntu[each.value.dc].id
  instance_type               = var.instance_type
  subnet_id                   = aws_subnet.public[each.value.dc].id
  vpc_security_group_ids      = [aws_security_group.cluster[each.value.dc].id]
  key_name                    = aws_key_pair.operator[each.value.dc].key_name
  associate_public_ip_address = true
  ebs_optimized               = true
  # The host key and the deadline timer (see modules/cloud-init). A machine that powers
  # itself off is terminated, so nothing outlives max_hours, state file or not.
  user_data                            = module.cloud_init.user_data[each.key]
  instance_initiated_shutdown_behavior = "terminate"
  # One-minute CPU metrics show a saturated client or server during a run.
  monitoring = true

  metadata_options {
    http_endpoint = "enabled"
    http_tokens   = "required" # IMDSv2 only
  }

  root_block_device {
    volume_type           = "gp3"
    volume_size           = var.root_volume_gb
    encrypted             = true
    delete_on_termination = true
    tags                  = merge(local.tags, { Name = each.key })
  }

  tags = merge(local.tags, {
    Name     = each.key
    dc       = each.value.dc
    role     = each.value.role
    deadline = local.deadline # read by ec2_status.py
  })

  lifecycle {
    # A newer Ubuntu image must not replace the machines of a running experiment.
    ignore_changes = [ami]
  }
}
