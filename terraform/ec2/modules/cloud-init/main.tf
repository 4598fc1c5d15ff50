# Each machine's cloud-init user data (#cloud-config):
#   - its SSH host key: the ed25519 pair generated in Terraform, so the operator's
#     known_hosts is written from Terraform's copy, not learned from a first connection.
#     The image's host keys are deleted (ssh_deletekeys), and cloud-init generates none
#     when ssh_keys is given (ssh_genkeytypes names ed25519 only, whose key then exists);
#   - the deadline: a systemd timer at an absolute time (OnCalendar, Persistent) powers
#     the machine off, and a check at every boot powers it off when the deadline has
#     passed meanwhile, so a reboot never postpones it.
# Kept apart from the AWS resources so a test can render it without a provider.
locals {
  calendar = "${formatdate("YYYY-MM-DD hh:mm:ss", var.deadline)} UTC"

  timer = <<-EOT
    [Unit]
    Description=k2bench: power off (and so terminate) at the cluster's deadline, ${var.deadline}

    [Timer]
    OnCalendar=${local.calendar}
    AccuracySec=1s
    Persistent=true

    [Install]
    WantedBy=timers.target
  EOT

  service = <<-EOT
    [Unit]
    Description=k2bench: power off at the cluster's deadline (max_hours)

    [Service]
    Type=oneshot
    ExecStart=/usr/bin/systemctl poweroff
  EOT

  # Every boot, before anything else: past the deadline, power off at once.
  boot_check = "[ \"$(date -u +%s)\" -lt \"$(date -u -d '${var.deadline}' +%s)\" ] || systemctl poweroff --no-block"

  cloud_config = {
    for name, key in var.host_keys : name => {
      ssh_deletekeys  = true
      ssh_genkeytypes = ["ed25519"]
      ssh_keys = {
        ed25519_private = key.private_key_openssh
        ed25519_public  = trimspace(key.public_key_openssh)
      }
      bootcmd = [["sh", "-c", local.boot_check]]
      write_files = [
        { path = "/etc/k2bench-deadline", permissions = "0644", content = "${var.deadline}\n" },
        { path = "/etc/systemd/system/k2bench-deadline.timer", permissions = "0644", content = local.timer },
        { path = "/etc/systemd/system/k2bench-deadline.service", permissions = "0644", content = local.service },
      ]
      # Once per instance; the enabled timer then comes back at every boot.
      runcmd = [
        ["systemctl", "daemon-reload"],
        ["systemctl", "enable", "--now", "k2bench-deadline.timer"],
      ]
    }
  }

  user_data = { for name, config in local.cloud_config : name => "#cloud-config\n${yamlencode(config)}" }
}
