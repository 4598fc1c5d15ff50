# What plan reads from AWS for the checks and the price estimate in guardrails.tf. All of
# these are data sources with constant arguments, so plan reads them before anything is
# created, and a failed check stops plan with nothing created.

# 'Inbound or outbound rules per security group', as applied to this account (AWS's
# default value when never raised). Not read when security_group_rule_quota overrides it.
data "aws_servicequotas_service_quota" "security_group_rules" {
  for_each = var.security_group_rule_quota == null ? var.datacenters : {}
  region   = each.value

  service_code = "vpc"
  quota_code   = "L-0EA8095F"
}

# 'Running On-Demand Standard (A, C, D, H, I, M, R, T, Z) instances', in vCPUs. Other
# families (G, P, X, Inf, ...) have quotas of their own, which are not checked.
data "aws_servicequotas_service_quota" "standard_vcpus" {
  for_each = var.vcpu_quota == null && local.standard_instance_family ? var.datacenters : {}
  region   = each.value

  service_code = "ec2"
  quota_code   = "L-1216C47A"
}

data "aws_ec2_instance_type" "this" {
  for_each = var.datacenters
  region   = each.value

  instance_type = var.instance_type
}

# The on-demand Linux price of instance_type in each datacenter's region. The Price List
# is a global service to the provider (no `region` here): it is asked through the
# provider's region, us-east-1, one of the few where its API answers, whatever region it
# prices (regionCode below). The filters select exactly one product, as this data source
# requires.
data "aws_pricing_product" "instance" {
  for_each = var.price_estimate ? var.datacenters : {}

  service_code = "AmazonEC2"

  filters {
    field = "instanceType"
    value = var.instance_type
  }

  filters {
    field = "regionCode"
    value = each.value
  }

  filters {
    field = "operatingSystem"
    value = "Linux"
  }

  filters {
    field = "preInstalledSw"
    value = "NA"
  }

  filters {
    field = "licenseModel"
    value = "No License required"
  }

  filters {
    field = "tenancy"
    value = "Shared"
  }

  filters {
    field = "capacitystatus"
    value = "Used"
  }

  # Without these two, other market options and operations of the same instance type
  # may match too, and the data source fails on more than one product.
  filters {
    field = "marketoption"
    value = "OnDemand"
  }

  filters {
    field = "operation"
    value = "RunInstances"
  }
}

locals {
  # Per region (datacenters sharing a region share its quotas): the quotas to check
  # against (null: not checked) and the vCPUs of one instance.
  region_dc = { for dc, region in var.datacenters : region => dc... }
  quota_inputs = {
    for region, dcs in local.region_dc : region => {
      security_group_rules = var.security_group_rule_quota != null ? var.security_group_rule_quota : data.aws_servicequotas_service_quota.security_group_rules[dcs[0]].value
      standard_vcpus       = !local.standard_instance_family ? null : var.vcpu_quota != null ? var.vcpu_quota : data.aws_servicequotas_service_quota.standard_vcpus[dcs[0]].value
      vcpus_per_instance   = data.aws_ec2_instance_type.this[dcs[0]].default_vcpus
    }
  }

  # Datacenter => the Price List product (JSON) of instance_type there.
  price_results = { for dc, product in data.aws_pricing_product.instance : dc => product.result }
}
