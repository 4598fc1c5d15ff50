# The inventory itself is the file apply writes (portal.py inventory, in the ready
# resource): Terraform evaluates file() at plan time, before that file exists, so no
# output can carry its content, and nothing in the state or the plan depends on it.
output "inventory_path" {
  description = "The k2bench inventory (schema k2bench-inventory/1, see k2bench/deploy/inventory.py) apply writes; known_hosts is next to it."
  value       = local.inventory_path
}

output "experiment" {
  description = "The experiment as the portal names it (project,name)."
  value       = "${var.project},${var.experiment_name}"
}

output "portal" {
  description = "portal.py's argument list for this experiment; append a command (make emulab-extend uses it)."
  value       = local.portal
}
