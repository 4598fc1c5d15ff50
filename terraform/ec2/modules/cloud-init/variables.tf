variable "host_keys" {
  description = "Machine name => its SSH host key pair in OpenSSH form (tls_private_key's private_key_openssh and public_key_openssh, ed25519)."
  type = map(object({
    private_key_openssh = string
    public_key_openssh  = string
  }))

  validation {
    condition     = alltrue([for k in values(var.host_keys) : startswith(trimspace(k.public_key_openssh), "ssh-ed25519 ")])
    error_message = "host_keys: every public_key_openssh must be an ssh-ed25519 key line."
  }
}

variable "deadline" {
  description = "When every machine powers off (RFC 3339, UTC, e.g. 2026-11-25T04:00:00Z); with instance_initiated_shutdown_behavior = terminate, the instance is terminated."
  type        = string

  validation {
    condition     = can(formatdate("YYYY", var.deadline)) && endswith(var.deadline, "Z")
    error_message = "deadline: must be an RFC 3339 time in UTC such as 2026-11-25T04:00:00Z."
  }
}
