# The controller plugin, two per cluster on distinct clients.
#
# It creates (and, with sub-dir-on-delete: delete, removes) each volume's
# sub-dir (volume parameter create-sub-dir: "true"). For that it mounts the
# file system root briefly, with the host's Lustre client, in the host's
# mount namespace, like the node plugin: pid_mode = "host" makes
# /proc/1/ns/mnt the host's, privileged gives setns() and mount(2) the
# CAP_SYS_ADMIN they need there. The working directory must be seen at the
# same path by the host and the container: Nomad binds the host directory
# <client state_dir>/csi/controller/<plugin id> at stage_publish_base_dir with
# bidirectional propagation, so that path is set to the host directory itself.
# Without create-sub-dir, drop the three mount flags, privileged and pid_mode.
#
# Client requirements: the docker plugin's allow_privileged = true, the Lustre
# client on the host, and client_state_dir equal to the client's state_dir.

variable "client_state_dir" {
  description = "the Nomad client's state_dir: <data_dir>/client unless client.state_dir is set"
  type        = string
  default     = "/opt/nomad/data/client"
}

variable "driver_name" {
  description = "CSI driver name, also the Nomad plugin id"
  type        = string
  default     = "azurelustre.csi.azure.com"
}

# No default: the image is on no public registry, and Docker pulls a name it
# does not have from Docker Hub. Name the image loaded on the clients or the
# one in your registry (docs/deploy.md): -var image=... or NOMAD_VAR_image.
variable "image" {
  description = "the lustre-csi image, as the clients' Docker knows it or in your registry"
  type        = string
}

locals {
  # The host directory Nomad binds at stage_publish_base_dir.
  plugin_dir = "${var.client_state_dir}/csi/controller/${var.driver_name}"
}

job "lustre-csi-controller" {
  type = "service"

  group "controller" {
    count = 2

    constraint {
      operator = "distinct_hosts"
      value    = "true"
    }

    task "plugin" {
      driver = "docker"

      config {
        image      = var.image
        privileged = true
        pid_mode   = "host"
        args = [
          "controller",
          "--drivername=${var.driver_name}",
          "--endpoint=unix:///csi/csi.sock",
          "--mount-mode=lustre",
          "--mount-namespace=/proc/1/ns/mnt",
          "--mount-helper=/sbin/mount.lustre",
          "--working-mount-dir=${local.plugin_dir}/work",
        ]
      }

      csi_plugin {
        id                     = var.driver_name
        type                   = "controller"
        mount_dir              = "/csi"
        stage_publish_base_dir = local.plugin_dir
      }

      resources {
        cpu    = 50
        memory = 32
      }
    }
  }
}
