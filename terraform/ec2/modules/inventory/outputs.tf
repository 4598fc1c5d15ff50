output "json" {
  description = "The inventory as JSON. Object keys come out sorted (jsonencode), so datacenter order is alphabetical: take datacenter order from the topology, not from here."
  value       = jsonencode(local.inventory)
}
