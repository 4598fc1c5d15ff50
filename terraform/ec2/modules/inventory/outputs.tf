output "json" {
  description = "The inventory as JSON. Object keys come out sorted (jsonencode), so datacenter order is alphabetical: take datacenter order from the topology, not from here."
  value       = jsonencode(local.inventory)
}

output "known_hosts" {
  description = "OpenSSH known_hosts content: one line per host given a host_key, \"<public_ip> <key>\"; empty when none has one."
  value       = local.known_hosts
}
