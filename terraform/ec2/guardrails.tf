# What keeps a cluster from failing half-way or running (and billing) forever: the quota
# checks that stop plan before anything is created, the deadline at which every instance
# terminates itself, and the hourly price estimate. Nothing here needs a provider:
# quotas.tf feeds local.quota_inputs and local.price_results, so a test can evaluate this
# file with made-up quotas and prices.

locals {
  # Families counted in the Standard vCPU quota (A, C, D, H, I, M, R, T, Z: c5, m7i-flex,
  # t3, i4i, im4gn, z1d, ...); not hpc*, inf*, mac*, trn*, dl* or the G, P, F, X, U, VT
  # families, whose quotas are others.
  standard_instance_family = can(regex("^([acdhmrtz][0-9]|i[0-9]|i[ms][0-9])", var.instance_type))

  vcpus_needed = { for region, n in local.hosts_per_region : region => n * local.quota_inputs[region].vcpus_per_instance }

  # AWS keeps rules per security group x security groups per network interface <= 1000;
  # every instance here has one group.
  security_group_rules_max = 1000
  max_machines             = floor((local.security_group_rules_max - 3) / local.prefix_list_rule_kinds)

  # Regions whose quota is below the need, each with the command that requests enough.
  # (A conditional, not &&: Terraform evaluates both sides of && and null > n fails.)
  security_group_rules_short = {
    for r in local.regions : r => "aws service-quotas request-service-quota-increase --service-code vpc --quota-code L-0EA8095F --desired-value ${local.inbound_rules_per_security_group} --region ${r}"
    if local.quota_inputs[r].security_group_rules < local.inbound_rules_per_security_group
  }
  vcpus_short = {
    for r in local.regions : r => "aws service-quotas request-service-quota-increase --service-code ec2 --quota-code L-1216C47A --desired-value ${local.vcpus_needed[r]} --region ${r}"
    if(local.quota_inputs[r].standard_vcpus == null ? false : local.vcpus_needed[r] > local.quota_inputs[r].standard_vcpus)
  }
}

# One check for the whole cluster, one message per quota naming every region short of it.
resource "terraform_data" "quota_check" {
  lifecycle {
    precondition {
      condition     = local.inbound_rules_per_security_group <= local.security_group_rules_max
      error_message = "Security-group rules: ${length(local.host_list)} machines need ${local.inbound_rules_per_security_group} inbound rules per security group, above the ${local.security_group_rules_max} AWS allows: use at most ${local.max_machines} machines (servers_per_dc, clients_per_dc, datacenters)."
    }

    precondition {
      condition     = length(local.security_group_rules_short) == 0
      error_message = "Quota 'Inbound or outbound rules per security group' (L-0EA8095F) is too low: ${length(local.host_list)} machines need ${local.inbound_rules_per_security_group} inbound rules per security group (2 per machine + 3), and ${join(", ", [for r in keys(local.security_group_rules_short) : "${r} has ${local.quota_inputs[r].security_group_rules}"])}. Request it (granted within minutes to days; aws service-quotas list-requested-service-quota-change-history shows the status), then run ec2-up again: ${join("; ", values(local.security_group_rules_short))}. Or use fewer machines."
    }

    precondition {
      condition     = length(local.vcpus_short) == 0
      error_message = "Quota 'Running On-Demand Standard (A, C, D, H, I, M, R, T, Z) instances' (L-1216C47A) is too low for ${var.instance_type} (${try(values(local.quota_inputs)[0].vcpus_per_instance, "?")} vCPUs each): ${join(", ", [for r in keys(local.vcpus_short) : "${r} needs ${local.vcpus_needed[r]} vCPUs for ${local.hosts_per_region[r]} machines and has ${local.quota_inputs[r].standard_vcpus}"])} (instances already running there count too). Request it, then run ec2-up again: ${join("; ", values(local.vcpus_short))}. Or use fewer or smaller machines (servers_per_dc, clients_per_dc, instance_type)."
    }
  }
}

# ---- cost guardrail --------------------------------------------------------------------

# The deadline is fixed when the cluster is first planned (ignore_changes: later plans
# keep it), so every instance, including one added later, stops at the same time.
resource "terraform_data" "deadline" {
  input = timeadd(plantimestamp(), "${local.max_minutes}m")

  lifecycle {
    ignore_changes = [input]
  }
}

locals {
  # `input`, not `output`: known at plan, so instances' user_data is too.
  deadline = terraform_data.deadline.input
}

# After the deadline the instances are gone; a new apply would start machines that stop
# at once. Checked at plan.
resource "terraform_data" "deadline_check" {
  lifecycle {
    precondition {
      condition     = timecmp(local.deadline, plantimestamp()) > 0
      error_message = "This cluster's deadline ${local.deadline} (max_hours) has passed and its instances have terminated themselves: remove the rest with make ec2-down (or terraform destroy), then ec2-up creates a new cluster with a new deadline."
    }
  }
}

locals {
  # USD per hour of one in-use public IPv4 address (every instance has one).
  public_ipv4_usd_per_hour = 0.005

  # USD per hour of one instance in each datacenter, from its Price List product:
  # terms.OnDemand holds one offer term with one price dimension (unit Hrs). null where
  # the product does not have that shape.
  instance_usd_per_hour = {
    for dc, result in local.price_results : dc => try(one(flatten([
      for term in values(jsondecode(result).terms.OnDemand) : [
        for dimension in values(term.priceDimensions) : tonumber(dimension.pricePerUnit.USD)
      ]
    ])), null)
  }
  priced = length(local.instance_usd_per_hour) == length(var.datacenters) && alltrue([for p in values(local.instance_usd_per_hour) : p != null])

  # Instances and their public addresses; not EBS volumes, data transfer or CloudWatch.
  hourly_price_usd = local.priced ? (
    sum([for h in local.host_list : local.instance_usd_per_hour[h.dc]]) + length(local.host_list) * local.public_ipv4_usd_per_hour
  ) : null

  summary = join("\n", [
    "${length(local.host_list)} x ${var.instance_type} in ${length(var.datacenters)} datacenters (${var.servers_per_dc} servers + ${var.clients_per_dc} clients each), experiment ${var.experiment_id}.",
    local.priced ? format("Estimated price: $%.2f per hour (on-demand Linux instances and their public IPv4 addresses; EBS, data transfer and monitoring extra).", local.hourly_price_usd) : "Estimated price: unknown (price_estimate = false, or an unexpected Price List answer); terraform/ec2/README.md has approximate prices.",
    "Deadline: ${local.deadline}: every instance powers off and terminates itself then (max_hours = ${var.max_hours}). make ec2-down removes everything sooner.",
    "What runs in each region, with or without this state: make ec2-status",
  ])
}
