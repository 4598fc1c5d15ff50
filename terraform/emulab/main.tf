# An Emulab experiment as one Terraform resource: apply starts it from the portal profile,
# waits until it is ready and writes the inventory; destroy terminates it. portal.py does
# the talking (XML-RPC to the portal, authenticated by your Emulab SSL certificate).

locals {
  inventory_path = abspath("${path.module}/inventory.json")

  # The profile's parameters (profile.py), as the portal binds them.
  bindings = jsonencode({
    datacenters    = join(",", var.datacenters)
    servers_per_dc = tostring(var.servers_per_dc)
    clients_per_dc = tostring(var.clients_per_dc)
    hardware_type  = var.hardware_type
  })

  # python3 portal.py <flags> <command>: an argument list, no shell, so no quoting of
  # user values. The command is appended by each provisioner.
  portal = concat(
    ["python3", abspath("${path.module}/portal.py")],
    ["--project", var.project, "--name", var.experiment_name, "--pem", pathexpand(var.pem_path)],
    var.ca_cert_path == "" ? [] : ["--ca-cert", pathexpand(var.ca_cert_path)],
  )
}

resource "terraform_data" "experiment" {
  # Destroy-time provisioners may refer only to self, so terminate's arguments live here.
  input = {
    portal = local.portal
  }

  # A running experiment cannot be reshaped: any of these changing means a new one.
  triggers_replace = {
    project  = var.project
    name     = var.experiment_name
    profile  = var.profile
    bindings = local.bindings
    duration = var.duration_hours
  }

  provisioner "local-exec" {
    interpreter = concat(local.portal, [
      "--profile", var.profile,
      "--duration", tostring(var.duration_hours),
      "--bindings", local.bindings,
    ])
    command = "start"
  }

  # Terraform never runs the destroy provisioner of a resource whose creation failed
  # (it is tainted), so wait and inventory terminate the experiment themselves on failure.
  provisioner "local-exec" {
    interpreter = concat(local.portal, [
      "--timeout", tostring(var.wait_timeout_minutes * 60),
      "--terminate-on-failure",
    ])
    command = "wait"
  }

  provisioner "local-exec" {
    interpreter = concat(local.portal, [
      "--datacenters", join(",", var.datacenters),
      "--ssh-user", var.ssh_user,
      "--ssh-private-key", var.ssh_private_key,
      "--out", local.inventory_path,
      "--terminate-on-failure",
    ])
    command = "inventory"
  }

  provisioner "local-exec" {
    when        = destroy
    interpreter = self.input.portal
    command     = "terminate"
  }
}

# Read after the experiment exists (depends_on defers it to apply on the first run).
data "local_file" "inventory" {
  filename   = local.inventory_path
  depends_on = [terraform_data.experiment]
}
