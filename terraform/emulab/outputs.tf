output "inventory" {
  description = "The k2bench inventory (schema k2bench-inventory/1, see k2bench/inventory.py) as JSON; also in inventory.json."
  value       = data.local_file.inventory.content
}

output "experiment" {
  description = "The experiment as the portal names it (project,name)."
  value       = "${var.project},${var.experiment_name}"
}
