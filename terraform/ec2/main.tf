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
    Name = each.key
    dc   = each.value.dc
    role = each.value.role
  })

  lifecycle {
    # A newer Ubuntu image must not replace the machines of a running experiment.
    ignore_changes = [ami]
  }
}
