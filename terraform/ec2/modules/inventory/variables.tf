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

variable "hosts" {
  description = "Every machine, in inventory order (a datacenter's hosts keep this order)."
  type = list(object({
    name       = string
    dc         = string
    region     = string
    role       = string
    public_ip  = string
    private_ip = string
  }))

  validation {
    condition     = alltrue([for h in var.hosts : contains(["server", "client"], h.role)])
    error_message = "hosts: every role must be server or client."
  }
}
