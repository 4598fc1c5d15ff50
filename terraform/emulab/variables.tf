variable "project" {
  description = "Emulab project (pid) the experiment runs in."
  type        = string

  validation {
    condition     = can(regex("^[A-Za-z0-9][-A-Za-z0-9]{0,47}$", var.project))
    error_message = "project: your Emulab project id, letters, digits and '-' (as shown on the portal), e.g. TF_VAR_project=MyProject."
  }
}

variable "experiment_name" {
  description = "Experiment name, unique within the project; also the inventory's experiment_id."
  type        = string
  default     = "k2bench"

  validation {
    # The name becomes part of every node's host name (node.experiment.project.emulab.net).
    condition     = can(regex("^[A-Za-z][-A-Za-z0-9]{0,15}$", var.experiment_name))
    error_message = "experiment_name: use 1-16 letters, digits or '-', starting with a letter."
  }
}

variable "profile" {
  description = "Portal profile made from terraform/emulab/profile.py, as project,name (e.g. MyProject,k2bench) or its UUID."
  type        = string

  validation {
    condition     = can(regex("^([-A-Za-z0-9]+,[-A-Za-z0-9_]+|[0-9a-fA-F-]{36})$", var.profile))
    error_message = "profile: give the portal profile as project,name (e.g. MyProject,k2bench) or its UUID; create it from terraform/emulab/profile.py (README.md)."
  }
}

variable "pem_path" {
  description = "Your Emulab SSL certificate and key (the PEM the portal's Download Credentials gives)."
  type        = string
  default     = "~/.ssl/emulab.pem"

  validation {
    condition     = try(fileexists(pathexpand(var.pem_path)), false)
    error_message = "pem_path: no such file; download your Emulab SSL certificate from the portal (Download Credentials) to ~/.ssl/emulab.pem or set TF_VAR_pem_path."
  }
}

variable "ca_cert_path" {
  description = "Optional CA certificate to verify the portal's server certificate with; empty skips verification, as the portal's own tools do."
  type        = string
  default     = ""

  validation {
    # try(): Terraform evaluates both sides of || (and fileexists fails on a directory).
    condition     = var.ca_cert_path == "" || try(fileexists(pathexpand(var.ca_cert_path)), false)
    error_message = "ca_cert_path: no such file; give the Emulab CA certificate's path or leave it empty."
  }
}

variable "duration_hours" {
  description = "Hours from the start until the experiment expires. Raising it extends the running experiment (the portal may need an administrator to approve long extensions); the portal cannot shorten one."
  type        = number
  default     = 16

  validation {
    condition     = var.duration_hours >= 1 && var.duration_hours <= 168 && floor(var.duration_hours) == var.duration_hours
    error_message = "duration_hours: must be a whole number of hours from 1 to 168."
  }
}

variable "wait_timeout_minutes" {
  description = "How long apply waits for the experiment to become ready before terminating it."
  type        = number
  default     = 60

  validation {
    condition     = var.wait_timeout_minutes >= 5 && var.wait_timeout_minutes <= 720
    error_message = "wait_timeout_minutes: must be from 5 to 720."
  }
}

variable "hardware_type" {
  description = "Emulab hardware type of every node (bare metal), e.g. d430."
  type        = string
  default     = "d430"

  validation {
    condition     = can(regex("^[a-z][a-z0-9-]*$", var.hardware_type))
    error_message = "hardware_type: an Emulab node type such as d430 or d710."
  }
}

variable "datacenters" {
  description = "Datacenter names in topology order; node names are <dc>-server-<i> / <dc>-client-<i>, dc in lower case."
  type        = list(string)
  default     = ["VA", "CA", "SP", "LDN", "TYO", "SG"]

  validation {
    condition     = length(var.datacenters) > 0 && length(distinct([for d in var.datacenters : lower(d)])) == length(var.datacenters) && alltrue([for d in var.datacenters : can(regex("^[A-Z][A-Z0-9]{1,7}$", d))])
    error_message = "datacenters: give distinct names of 2-8 upper-case letters or digits (VA, LDN, ...)."
  }
}

variable "servers_per_dc" {
  description = "Server hosts per datacenter; must equal the experiment's servers_per_dc (the shipped experiments use 2; the paper's scale is 4: make emulab-up SERVERS_PER_DC=4)."
  type        = number
  default     = 2

  validation {
    condition     = var.servers_per_dc >= 1 && var.servers_per_dc <= 100 && floor(var.servers_per_dc) == var.servers_per_dc
    error_message = "servers_per_dc: must be a whole number from 1 to 100."
  }
}

variable "clients_per_dc" {
  description = "Client machines per datacenter."
  type        = number
  default     = 8

  validation {
    condition     = var.clients_per_dc >= 1 && var.clients_per_dc <= 154 && floor(var.clients_per_dc) == var.clients_per_dc
    error_message = "clients_per_dc: must be a whole number from 1 to 154."
  }
}

variable "ssh_user" {
  description = "Your Emulab login, written into the inventory; empty takes the login your certificate (pem_path) names. Never taken from the manifest, which lists every project member."
  type        = string
  default     = ""

  validation {
    condition     = can(regex("^([a-z][-a-z0-9_]{0,31})?$", var.ssh_user))
    error_message = "ssh_user: your Emulab login (lower case), or empty to take it from your certificate."
  }
}

variable "ssh_private_key" {
  description = "Path of the private key whose public half is in your Emulab account, written into the inventory."
  type        = string
  default     = "~/.ssh/id_ed25519"

  validation {
    condition     = length(trimspace(var.ssh_private_key)) > 0
    error_message = "ssh_private_key: give the path of your SSH private key (e.g. ~/.ssh/id_ed25519)."
  }
}

variable "host_keys" {
  description = "Where the nodes' SSH host keys come from: published (each node writes its keys at boot to the experiment's directory on the testbed's file server; read over SSH from ops_host, verified by your known_hosts) or keyscan (ssh-keyscan: trusts whatever answers first, not verified)."
  type        = string
  default     = "published"

  validation {
    condition     = contains(["published", "keyscan"], var.host_keys)
    error_message = "host_keys: published or keyscan (keyscan trusts the first key that answers: opt in only if you accept that)."
  }
}

variable "ops_host" {
  description = "The testbed's ops (users) host, where your account can read the experiment's /proj directory over SSH; its host key must already be in your ~/.ssh/known_hosts."
  type        = string
  default     = "users.emulab.net"

  validation {
    condition     = can(regex("^[A-Za-z0-9][-A-Za-z0-9.]{0,252}$", var.ops_host))
    error_message = "ops_host: a host name such as users.emulab.net."
  }
}

variable "portal_retry_minutes" {
  description = "How long each portal call keeps retrying transient failures (network, timeouts, HTTP 5xx, portal busy) before giving up; giving up never terminates the experiment."
  type        = number
  default     = 10

  validation {
    condition     = var.portal_retry_minutes >= 0 && var.portal_retry_minutes <= 120
    error_message = "portal_retry_minutes: must be from 0 to 120."
  }
}
