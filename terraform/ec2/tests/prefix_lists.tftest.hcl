# terraform test of the prefix lists, offline, with the mocks of plan.tftest.hcl: the machines'
# addresses are split into lists of at most 100 (CreateManagedPrefixList's limit per call),
# each region holding its own copies. Its own file, so that a test can run it alone.

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

run "over_a_hundred_machines_split_into_prefix_lists_of_at_most_100" {
  command = plan

  # 102 machines in two regions: two lists in each, of 100 and 2
  variables {
    datacenters               = { VA = "us-east-1", CA = "us-west-1" }
    servers_per_dc            = 30
    clients_per_dc            = 21
    price_estimate            = false
    security_group_rule_quota = 207
    vcpu_quota                = 408
  }

  assert {
    condition     = length(aws_ec2_managed_prefix_list.cluster) == 4 && aws_ec2_managed_prefix_list.cluster["VA-0"].max_entries == 100 && aws_ec2_managed_prefix_list.cluster["VA-1"].max_entries == 2 && aws_ec2_managed_prefix_list.cluster["CA-1"].max_entries == 2
    error_message = "102 machines: lists of 100 and 2 in each of the 2 regions"
  }
  assert {
    condition     = output.inbound_rules_per_security_group == 207
    error_message = "a rule referencing a list weighs its max_entries: 2 x 102 + 3"
  }
  assert {
    condition     = output.hourly_price_usd == null && strcontains(output.summary, "Estimated price: unknown")
    error_message = "no price without price_estimate"
  }
}
