module "inventory" {
  source = "./modules/inventory"

  experiment_id   = var.experiment_id
  ssh_user        = "ubuntu" # Canonical's Ubuntu images
  ssh_private_key = var.ssh_private_key
  hosts = [
    for h in local.host_list : merge(h, {
      public_ip  = aws_instance.host[h.name].public_ip
      private_ip = aws_instance.host[h.name].private_ip
    })
  ]
}

# Beside this file, where `make ec2-run` and Ansible's inventory script read it.
resource "local_file" "inventory" {
  filename        = "${path.module}/inventory.json"
  content         = module.inventory.json
  file_permission = "0644"
}

output "inventory" {
  description = "The k2bench inventory (schema k2bench-inventory/1, see k2bench/inventory.py) as JSON; also written to inventory.json."
  value       = module.inventory.json
}

output "inbound_rules_per_security_group" {
  description = "Inbound rules each security group uses, as AWS counts them against quota L-0EA8095F."
  value       = local.inbound_rules_per_security_group
}
