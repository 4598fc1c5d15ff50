# Only variables feed these, so a test can evaluate them without the AWS provider.
locals {
  tags = {
    experiment_id = var.experiment_id
    project       = "k2bench"
  }

  # Every machine, in inventory order: datacenters by name, then servers before clients,
  # each by index (so va-server-2 comes before va-server-10).
  host_list = flatten([
    for dc, region in var.datacenters : [
      for role in ["server", "client"] : [
        for i in range(role == "server" ? var.servers_per_dc : var.clients_per_dc) : {
          name   = "${lower(dc)}-${role}-${i}"
          dc     = dc
          region = region
          role   = role
        }
      ]
    ]
  ])
  hosts = { for h in local.host_list : h.name => h }

  # Quotas are per region, and two datacenters may share one.
  regions          = distinct(values(var.datacenters))
  hosts_per_region = { for r in local.regions : r => length([for h in local.host_list : h if h.region == r]) }

  # Every machine's public address goes into prefix lists that every security group
  # references. CreateManagedPrefixList takes at most 100 entries per call, so the machines
  # are split into lists of at most 100; each datacenter (region) holds its own copies.
  prefix_list_max_entries = 100
  cluster_chunks          = chunklist([for h in local.host_list : h.name], local.prefix_list_max_entries)
  prefix_lists = merge([
    for dc, region in var.datacenters : {
      for i, chunk in local.cluster_chunks : "${dc}-${i}" => {
        dc          = dc
        region      = region
        index       = i
        hosts       = chunk
        max_entries = length(chunk)
      }
    }
  ]...)

  # Inbound rules each security group needs, counted as AWS counts them against quota
  # L-0EA8095F: a rule that references a prefix list weighs the list's max_entries. Two
  # rules (server ports, ICMP echo) reference each of the cluster's lists, so together they
  # weigh 2 x machines; plus SSH from the operator and the two VPC-CIDR rules.
  prefix_list_rule_kinds           = 2
  inbound_rules_per_security_group = local.prefix_list_rule_kinds * sum([for c in local.cluster_chunks : length(c)]) + 3

  # The self-termination deadline, minutes after the first plan.
  max_minutes = ceil(var.max_hours * 60)
}
