# An Emulab experiment in four built-in resources, no provider: `started` records when it
# was asked for, `experiment` starts it from the portal profile (and terminates it on
# destroy), `ready` waits until it is ready and writes inventory.json + known_hosts,
# `lifetime` keeps its expiry at start + duration_hours by extending it. portal.py does
# the talking (XML-RPC to the portal, authenticated by your Emulab SSL certificate).
# Destroy needs nothing but the state: no data source reads the git-ignored inventory.

locals {
  inventory_path   = abspath("${path.module}/inventory.json")
  known_hosts_path = abspath("${path.module}/known_hosts")

  # The profile's parameters (profile.py), as the portal binds them.
  bindings = jsonencode({
    datacenters    = join(",", var.datacenters)
    servers_per_dc = tostring(var.servers_per_dc)
    clients_per_dc = tostring(var.clients_per_dc)
    hardware_type  = var.hardware_type
  })

  # A running experiment cannot be reshaped: any of these changing means a new one.
  # duration_hours is not here: a longer duration extends the running experiment.
  identity = {
    project  = var.project
    name     = var.experiment_name
    profile  = var.profile
    bindings = local.bindings
  }

  # python3 portal.py <flags> <command>: an argument list, no shell, so no quoting of
  # user values. The command is appended by each provisioner.
  portal = concat(
    ["python3", abspath("${path.module}/portal.py")],
    ["--project", var.project, "--name", var.experiment_name, "--pem", pathexpand(var.pem_path)],
    ["--retry-for", tostring(var.portal_retry_minutes * 60)],
    var.ca_cert_path == "" ? [] : ["--ca-cert", pathexpand(var.ca_cert_path)],
  )
}

# When the experiment was asked for; the expiry duration_hours asks for counts from here.
resource "terraform_data" "started" {
  input            = plantimestamp()
  triggers_replace = local.identity

  lifecycle {
    ignore_changes = [input]
  }
}

resource "terraform_data" "experiment" {
  # Destroy-time provisioners may refer only to self, so terminate's arguments live here.
  input = {
    portal = local.portal
  }

  triggers_replace = merge(local.identity, { started = terraform_data.started.id })

  provisioner "local-exec" {
    interpreter = concat(local.portal, [
      "--profile", var.profile,
      "--duration", tostring(var.duration_hours),
      "--bindings", local.bindings,
    ])
    command = "start"
  }

  # Terminating an experiment that is already gone succeeds, so destroy can be repeated.
  provisioner "local-exec" {
    when        = destroy
    interpreter = self.input.portal
    command     = "terminate"
  }
}

# Ready and described. A failure here taints only this resource, so the next apply waits
# again for the same experiment: a portal that was unreachable for a while costs nothing.
# wait terminates the experiment only when it definitively failed (failed on the portal,
# or not ready within wait_timeout_minutes).
resource "terraform_data" "ready" {
  input = {
    files = [local.inventory_path, local.known_hosts_path]
  }

  triggers_replace = {
    experiment = terraform_data.experiment.id
    inventory  = [var.ssh_user, var.ssh_private_key, var.host_keys, var.ops_host]
  }

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
      "--ssh-private-key", var.ssh_private_key,
      "--host-keys", var.host_keys,
      "--ops-host", var.ops_host,
      "--out", local.inventory_path,
      "--known-hosts", local.known_hosts_path,
      ], var.ssh_user == "" ? [] : ["--ssh-user", var.ssh_user],
    )
    command = "inventory"
  }

  # The experiment is going away: so do its inventory and host keys.
  provisioner "local-exec" {
    when        = destroy
    interpreter = ["python3", "-c", "import json, os, sys; [os.remove(p) for p in json.loads(sys.argv[1]) if os.path.exists(p)]"]
    command     = jsonencode(self.input.files)
  }
}

# Keeps the expiry at started + duration_hours: a larger duration_hours extends the
# running experiment (portal.extendExperiment). The portal cannot shorten one; a smaller
# value is reported and changes nothing (make emulab-down ends it).
resource "terraform_data" "lifetime" {
  triggers_replace = {
    experiment = terraform_data.experiment.id
    hours      = var.duration_hours
  }

  provisioner "local-exec" {
    interpreter = concat(local.portal, [
      "--hours", tostring(var.duration_hours),
      "--until", timeadd(terraform_data.started.output, "${var.duration_hours}h"),
    ])
    command = "lifetime"
  }

  depends_on = [terraform_data.ready]
}
