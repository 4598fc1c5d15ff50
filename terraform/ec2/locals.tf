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

  # Inbound rules each security group needs, counted as AWS counts them: a rule that
  # references a prefix list weighs its max_entries (one entry per machine), and two rules
  # (server ports, ICMP echo) reference it; plus SSH and the two VPC-CIDR rules.
  inbound_rules_per_security_group = 2 * length(local.host_list) + 3
}
