variable "experiment_id" {
  description = "The inventory's experiment_id."
  type        = string
}

variable "ssh_user" {
  description = "User SSH logs in as on every machine."
  type        = string
}

variable "ssh_private_key" {
  description = "Path of the private key SSH uses."
  type        = string
}

variable "known_hosts" {
  description = "Path of the OpenSSH known_hosts file holding every host's key, written as ssh.known_hosts (relative paths resolve against the inventory file's directory); null (default) leaves the field out."
  type        = string
  default     = null

  validation {
    condition     = var.known_hosts == null || try(length(trimspace(var.known_hosts)) > 0, false)
    error_message = "known_hosts: give a path such as \"known_hosts\", or leave it null."
  }
}

variable "hosts" {
  description = "Every machine, in inventory order (a datacenter's hosts keep this order). host_key (optional): the machine's OpenSSH public host key line, for output known_hosts."
  type = list(object({
    name       = string
    dc         = string
    region     = string
    role       = string
    public_ip  = string
    private_ip = string
    host_key   = optional(string)
  }))

  validation {
    condition     = alltrue([for h in var.hosts : contains(["server", "client"], h.role)])
    error_message = "hosts: every role must be server or client."
  }

  validation {
    condition     = alltrue([for h in var.hosts : h.host_key == null || can(regex("^(ssh-ed25519|ssh-rsa|ecdsa-sha2-nistp(256|384|521)) [A-Za-z0-9+/]+=*$", trimspace(coalesce(h.host_key, "-"))))])
    error_message = "hosts: a host_key must be one OpenSSH public key without comment (ssh-ed25519 AAAA...)."
  }
}
