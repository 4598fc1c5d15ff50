# What plan reads from AWS, made up for terraform test (mock_provider "aws" with this
# directory as its source): the schema still comes from the provider plugin.
mock_data "aws_ec2_instance_type_offerings" {
  defaults = {
    locations = ["zone-b", "zone-a"]
  }
}

mock_data "aws_ami" {
  defaults = {
    id = "ami-0123456789abcdef0"
  }
}

# AWS's default 'rules per security group'; runs override the vCPU quota where it matters.
mock_data "aws_servicequotas_service_quota" {
  defaults = {
    value = 60
  }
}

mock_data "aws_ec2_instance_type" {
  defaults = {
    default_vcpus = 8
  }
}

# One on-demand offer term with one hourly price dimension: the shape guardrails.tf reads.
mock_data "aws_pricing_product" {
  defaults = {
    result = "{\"product\":{\"sku\":\"X\"},\"terms\":{\"OnDemand\":{\"X.T\":{\"priceDimensions\":{\"X.T.D\":{\"unit\":\"Hrs\",\"pricePerUnit\":{\"USD\":\"0.3400000000\"}}}}}}}"
  }
}

# Addresses of the shape the inventory must carry (the mock would make up random strings).
mock_resource "aws_instance" {
  defaults = {
    public_ip  = "198.51.100.7"
    private_ip = "10.42.0.7"
  }
}
