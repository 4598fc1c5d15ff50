# terraform test of the whole EC2 configuration, offline: the providers are mocked with the
# values in mocks/ (their schemas from the stand-in plugins, terraform/standin_provider.py;
# `make terraform-test` sets them up). What these runs prove: the configuration plans as a
# whole, the data sources feed the quota checks and the price estimate through attributes
# the real schema has, paper scale stops at plan on each quota, and apply yields an
# inventory of the shape k2bench reads. What they cannot: the provider's own behaviour,
# real quotas, real prices (terraform/README.md).

mock_provider "aws" {
  source = "./tests/mocks"
}

mock_provider "tls" {
  source = "./tests/mocks"
}

mock_provider "local" {}

variables {
  experiment_id  = "k2b-test"
  operator_cidr  = "203.0.113.7/32"
  ssh_public_key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIExample me@laptop"
}

run "the_default_cluster_plans_within_default_quotas" {
  command = plan

  override_data {
    target = data.aws_servicequotas_service_quota.standard_vcpus
    values = {
      value = 32
    }
  }

  assert {
    condition     = length(aws_instance.host) == 24 && length([for h in aws_instance.host : h if h.instance_type == "c5.2xlarge"]) == 24
    error_message = "6 datacenters x (2 servers + 2 clients) of c5.2xlarge"
  }
  assert {
    condition     = output.inbound_rules_per_security_group == 51
    error_message = "2 rules per machine + 3"
  }
  assert {
    condition     = length(aws_ec2_managed_prefix_list.cluster) == 6 && alltrue([for pl in aws_ec2_managed_prefix_list.cluster : pl.max_entries == 24])
    error_message = "one list of all 24 machines in each region"
  }
  assert {
    condition     = aws_subnet.public["VA"].availability_zone == "zone-a"
    error_message = "the first zone (sorted) that offers the instance type"
  }
  assert {
    condition     = output.hourly_price_usd == 8.28
    error_message = "24 x 0.34 + 24 x 0.005 public IPv4 = 8.28 USD per hour, got ${output.hourly_price_usd}"
  }
  assert {
    condition     = strcontains(output.summary, "Estimated price: $8.28 per hour")
    error_message = "the summary states the price"
  }
  assert {
    condition     = timecmp(output.deadline, timeadd(plantimestamp(), "239m")) > 0 && timecmp(output.deadline, timeadd(plantimestamp(), "241m")) < 0
    error_message = "the deadline is max_hours (4) after the plan: ${output.deadline}"
  }
}

run "paper_scale_stops_at_plan_on_the_vcpu_quota" {
  command = plan

  variables {
    servers_per_dc = 4
  }

  override_data {
    target = data.aws_servicequotas_service_quota.security_group_rules
    values = {
      value = 75
    }
  }
  override_data {
    target = data.aws_servicequotas_service_quota.standard_vcpus
    values = {
      value = 32
    }
  }

  expect_failures = [terraform_data.quota_check]
}

run "paper_scale_stops_at_plan_on_the_security_group_rule_quota" {
  command = plan

  variables {
    servers_per_dc = 4
  }

  override_data {
    target = data.aws_servicequotas_service_quota.standard_vcpus
    values = {
      value = 48
    }
  }

  expect_failures = [terraform_data.quota_check]
}

run "paper_scale_plans_with_raised_quotas" {
  command = plan

  variables {
    servers_per_dc = 4
  }

  override_data {
    target = data.aws_servicequotas_service_quota.security_group_rules
    values = {
      value = 75
    }
  }
  override_data {
    target = data.aws_servicequotas_service_quota.standard_vcpus
    values = {
      value = 48
    }
  }

  assert {
    condition     = length(aws_instance.host) == 36 && output.inbound_rules_per_security_group == 75
    error_message = "4 servers + 2 clients in each of 6 datacenters; 75 rules"
  }
}

run "apply_yields_the_inventory_k2bench_reads" {
  command = apply

  variables {
    security_group_rule_quota = 60
    vcpu_quota                = 32
  }

  assert {
    condition     = jsondecode(output.inventory).schema == "k2bench-inventory/1" && jsondecode(output.inventory).provider == "ec2" && jsondecode(output.inventory).latency == "real" && jsondecode(output.inventory).topology_address == "public"
    error_message = "an ec2 inventory of k2bench's schema"
  }
  assert {
    condition     = keys(jsondecode(output.inventory).datacenters) == ["CA", "LDN", "SG", "SP", "TYO", "VA"]
    error_message = "the six datacenters"
  }
  assert {
    condition     = [for h in jsondecode(output.inventory).datacenters["VA"].hosts : h.name] == ["va-server-0", "va-server-1", "va-client-0", "va-client-1"] && jsondecode(output.inventory).datacenters["VA"].region == "us-east-1"
    error_message = "servers then clients, by index"
  }
  assert {
    condition     = alltrue([for dc in values(jsondecode(output.inventory).datacenters) : alltrue([for h in dc.hosts : h.public_ip == aws_instance.host[h.name].public_ip && h.private_ip == aws_instance.host[h.name].private_ip && can(cidrnetmask("${h.public_ip}/32")) && can(cidrnetmask("${h.private_ip}/32")) && h.ssh_port == 22])])
    error_message = "each host's addresses are its instance's, IPv4 addresses"
  }
  assert {
    condition     = jsondecode(output.inventory).ssh.user == "ubuntu" && jsondecode(output.inventory).ssh.known_hosts == "known_hosts"
    error_message = "ubuntu, with the known_hosts Terraform wrote"
  }
  assert {
    condition     = length(split("\n", trimspace(local_file.known_hosts.content))) == 24
    error_message = "a host key line per machine"
  }
}
