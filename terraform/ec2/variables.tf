variable "experiment_id" {
  description = "Names and tags every resource, and is the inventory's experiment_id (e.g. k2b-demo)."
  type        = string

  validation {
    condition     = can(regex("^[a-z][a-z0-9-]{2,30}[a-z0-9]$", var.experiment_id))
    error_message = "experiment_id: use 4-32 characters of a-z, 0-9 and '-', starting with a letter and not ending with '-' (e.g. k2b-demo)."
  }
}

variable "operator_cidr" {
  description = "The only network SSH (port 22) is admitted from: your address as a /32 (e.g. 203.0.113.7/32)."
  type        = string

  validation {
    condition     = can(cidrnetmask(var.operator_cidr))
    error_message = "operator_cidr: must be an IPv4 CIDR such as 203.0.113.7/32 (your address: curl -s https://checkip.amazonaws.com)."
  }

  validation {
    # Anything this wide is the internet; SSH is for the operator only.
    condition     = try(tonumber(split("/", var.operator_cidr)[1]) >= 8, false)
    error_message = "operator_cidr: 0.0.0.0/0 and other prefixes shorter than /8 are refused; give your own address as a /32."
  }

  validation {
    condition     = try(cidrhost(var.operator_cidr, 0) == split("/", var.operator_cidr)[0], false)
    error_message = "operator_cidr: host bits must be zero (203.0.113.7/32, or 203.0.113.0/24, not 203.0.113.7/24)."
  }
}

variable "ssh_public_key" {
  description = "OpenSSH public key installed on every instance (e.g. TF_VAR_ssh_public_key=\"$(cat ~/.ssh/id_ed25519.pub)\")."
  type        = string

  validation {
    condition     = can(regex("^(ssh-ed25519|ssh-rsa|ecdsa-sha2-nistp(256|384|521)) [A-Za-z0-9+/]+=*( .*)?$", trimspace(var.ssh_public_key)))
    error_message = "ssh_public_key: must be one OpenSSH public key line (ssh-ed25519 AAAA... comment), e.g. TF_VAR_ssh_public_key=\"$(cat ~/.ssh/id_ed25519.pub)\"."
  }
}

variable "ssh_private_key" {
  description = "Path of the private key matching ssh_public_key, written into the inventory for Ansible and the orchestrator."
  type        = string
  default     = "~/.ssh/id_ed25519"

  validation {
    condition     = length(trimspace(var.ssh_private_key)) > 0
    error_message = "ssh_private_key: give the path of the private key matching ssh_public_key (e.g. ~/.ssh/id_ed25519)."
  }
}

variable "datacenters" {
  description = "Datacenter name => AWS region (the K2 paper's six datacenters). Host names are <dc>-server-<i> and <dc>-client-<i>, dc in lower case."
  type        = map(string)
  default = {
    VA  = "us-east-1"
    CA  = "us-west-1"
    SP  = "sa-east-1"
    LDN = "eu-west-2"
    TYO = "ap-northeast-1"
    SG  = "ap-southeast-1"
  }

  validation {
    condition     = length(var.datacenters) > 0 && alltrue([for dc in keys(var.datacenters) : can(regex("^[A-Z][A-Z0-9]{1,7}$", dc))])
    error_message = "datacenters: give at least one datacenter, named with 2-8 upper-case letters or digits (VA, LDN, ...)."
  }

  validation {
    condition     = alltrue([for r in values(var.datacenters) : can(regex("^[a-z]{2}(-[a-z]+)+-[0-9]$", r))])
    error_message = "datacenters: each value must be an AWS region name such as us-east-1."
  }
}

variable "servers_per_dc" {
  description = "Server machines (S) per datacenter, one server each: must equal the experiment's servers_per_dc. 2 matches every shipped experiment (workloads/*.yaml); the paper's scale is 4 (make ec2-up SERVERS_PER_DC=4, or TF_VAR_servers_per_dc=4)."
  type        = number
  default     = 2

  validation {
    condition     = var.servers_per_dc >= 1 && var.servers_per_dc <= 32 && floor(var.servers_per_dc) == var.servers_per_dc
    error_message = "servers_per_dc: must be a whole number from 1 to 32."
  }
}

variable "clients_per_dc" {
  description = "Client machines per datacenter, one YCSB process each; the orchestrator splits a datacenter's threads and target over them. 2 carries every shipped workload (at most 48 threads per datacenter) and keeps the default cluster (6 x 4 machines) small: 51 inbound rules per security group (AWS's default quota is 60) and 4 x 8 = 32 vCPUs per region; plan checks both against your quotas."
  type        = number
  default     = 2

  validation {
    condition     = var.clients_per_dc >= 1 && var.clients_per_dc <= 64 && floor(var.clients_per_dc) == var.clients_per_dc
    error_message = "clients_per_dc: must be a whole number from 1 to 64."
  }
}

variable "instance_type" {
  description = "EC2 instance type of every server and client. c5.2xlarge (8 vCPUs, 16 GiB) has fixed performance: no CPU credits that throttle a loaded server or bill surplus, as burstable t3 types do."
  type        = string
  default     = "c5.2xlarge"

  validation {
    condition     = can(regex("^[a-z][a-z0-9-]*\\.[a-z0-9]+$", var.instance_type))
    error_message = "instance_type: must be an EC2 instance type such as t3.2xlarge or c5.2xlarge."
  }
}

variable "root_volume_gb" {
  description = "Root volume size (GiB, gp3) of every instance: OS, JDK, jars and run logs."
  type        = number
  default     = 30

  validation {
    condition     = var.root_volume_gb >= 10 && var.root_volume_gb <= 1000 && floor(var.root_volume_gb) == var.root_volume_gb
    error_message = "root_volume_gb: must be a whole number of GiB from 10 to 1000."
  }
}

variable "server_ports" {
  description = "TCP port range the k2bench servers listen on; admitted from the cluster's own addresses only."
  type = object({
    from = number
    to   = number
  })
  default = { from = 17000, to = 17999 }

  validation {
    condition     = var.server_ports.from >= 1024 && var.server_ports.from <= var.server_ports.to && var.server_ports.to <= 65535
    error_message = "server_ports: need 1024 <= from <= to <= 65535 (default { from = 17000, to = 17999 })."
  }
}

variable "vpc_cidr" {
  description = "CIDR of each datacenter's VPC (the VPCs are not peered, so all may use the same one)."
  type        = string
  default     = "10.42.0.0/16"

  validation {
    condition     = can(cidrsubnet(var.vpc_cidr, 4, 0)) && try(tonumber(split("/", var.vpc_cidr)[1]) >= 16 && tonumber(split("/", var.vpc_cidr)[1]) <= 24, false)
    error_message = "vpc_cidr: must be an IPv4 CIDR from /16 to /24, such as 10.42.0.0/16."
  }
}

variable "security_group_rule_quota" {
  description = "Overrides the 'Inbound or outbound rules per security group' quota (L-0EA8095F) that plan otherwise reads from Service Quotas in every region; null (default) reads it. Set it only without permission to read Service Quotas."
  type        = number
  default     = null

  validation {
    condition     = var.security_group_rule_quota == null || try(var.security_group_rule_quota >= 1 && var.security_group_rule_quota <= 1000, false)
    error_message = "security_group_rule_quota: leave it unset (null) to read the quota from Service Quotas, or give your granted value, from 1 to 1000."
  }
}

variable "vcpu_quota" {
  description = "Overrides the 'Running On-Demand Standard (A, C, D, H, I, M, R, T, Z) instances' vCPU quota (L-1216C47A) that plan otherwise reads from Service Quotas in every region; null (default) reads it. Set it only without permission to read Service Quotas."
  type        = number
  default     = null

  validation {
    condition     = var.vcpu_quota == null || try(var.vcpu_quota >= 1 && floor(var.vcpu_quota) == var.vcpu_quota, false)
    error_message = "vcpu_quota: leave it unset (null) to read the quota from Service Quotas, or give your granted number of vCPUs (a whole number >= 1)."
  }
}

variable "max_hours" {
  description = "Every instance powers off, and so terminates itself, this many hours after the cluster was first planned (a systemd timer at an absolute time; a reboot does not postpone it). Fixed when the cluster is created."
  type        = number
  default     = 4

  validation {
    condition     = var.max_hours > 0 && var.max_hours <= 168
    error_message = "max_hours: must be more than 0 and at most 168 (a week); e.g. 4 or 0.5."
  }
}

variable "price_estimate" {
  description = "Look up the on-demand Linux price of instance_type in each region (AWS Price List API, pricing:GetProducts) for the hourly estimate that ec2-up prints. false skips the lookup, e.g. without that permission."
  type        = bool
  default     = true

  validation {
    condition     = var.price_estimate != null
    error_message = "price_estimate: must be true or false."
  }
}
