output "user_data" {
  description = "Machine name => its #cloud-config user data. Holds the machine's private host key."
  value       = local.user_data
  sensitive   = true
}
