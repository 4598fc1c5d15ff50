module "inventory" {
  source = "./modules/inventory"

  experiment_id   = var.experiment_id
  ssh_user        = "ubuntu" # Canonical's Ubuntu images
  ssh_private_key = var.ssh_private_key
  known_hosts     = "known_hosts" # beside inventory.json
  hosts = [
    for h in local.host_list : merge(h, {
      public_ip  = aws_instance.host[h.name].public_ip
      private_ip = aws_instance.host[h.name].private_ip
      host_key   = tls_private_key.host[h.name].public_key_openssh
    })
  ]
}

# Every host's key by public address, from the keys Terraform installed (see main.tf).
resource "local_file" "known_hosts" {
  filename        = "${path.module}/known_hosts"
  content         = module.inventory.known_hosts
  file_permission = "0644"
}

# Beside this file, where `make ec2-run` and Ansible's inventory script read it; written
# after known_hosts, so an inventory is never there without the keys it points to.
resource "local_file" "inventory" {
  filename        = "${path.module}/inventory.json"
  content         = module.inventory.json
  file_permission = "0644"

  depends_on = [local_file.known_hosts]
}

output "inventory" {
  description = "The k2bench inventory (schema k2bench-inventory/1, see k2bench/deploy/inventory.py) as JSON; also written to inventory.json."
  value       = module.inventory.json
}

output "inbound_rules_per_security_group" {
  description = "Inbound rules each security group uses, as AWS counts them against quota L-0EA8095F."
  value       = local.inbound_rules_per_security_group
}

output "deadline" {
  description = "When every instance powers off and terminates itself (RFC 3339, UTC): max_hours after the cluster was first planned."
  value       = local.deadline
}

output "hourly_price_usd" {
  description = "Estimated USD per hour: on-demand Linux price of every instance (Price List API) plus its public IPv4 address; null without price_estimate. EBS, data transfer and monitoring are extra."
  value       = local.hourly_price_usd == null ? null : floor(local.hourly_price_usd * 100 + 0.5) / 100
}

output "summary" {
  description = "What ec2-up prints after apply: machines, estimated price per hour, deadline."
  value       = local.summary
}
