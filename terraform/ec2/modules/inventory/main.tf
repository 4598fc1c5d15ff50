# Renders the EC2 inventory (k2bench/deploy/inventory.py, schema k2bench-inventory/1). Kept apart
# from the AWS resources so a test can render it from literal addresses without a provider.
locals {
  dcs = distinct([for h in var.hosts : h.dc])

  inventory = {
    schema           = "k2bench-inventory/1"
    experiment_id    = var.experiment_id
    provider         = "ec2"
    latency          = "real"   # the regions' own WAN latency, no netem
    topology_address = "public" # datacenters reach each other over the internet
    ssh = merge(
      { user = var.ssh_user, private_key = var.ssh_private_key },
      var.known_hosts == null ? {} : { known_hosts = var.known_hosts },
    )
    datacenters = {
      for dc in local.dcs : dc => {
        region = one(distinct([for h in var.hosts : h.region if h.dc == dc]))
        hosts = [
          for h in var.hosts : {
            name       = h.name
            role       = h.role
            public_ip  = h.public_ip
            private_ip = h.private_ip
            ssh_port   = 22
          } if h.dc == dc
        ]
      }
    }
  }
}

locals {
  # One line per host with a key, by public address: what ssh and Fabric look up when they
  # connect to public_ip on port 22.
  known_hosts = join("", [for h in var.hosts : "${h.public_ip} ${trimspace(h.host_key)}\n" if h.host_key != null])
}
