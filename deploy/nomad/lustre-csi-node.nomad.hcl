# The node plugin on every Nomad client (a system job). Nomad's csi_plugin
# block gives the task a socket directory at mount_dir and discovers the
# plugin there.
#
# Mounting: the image is FROM scratch and cannot run the host's dynamically
# linked mount.lustre, so the driver runs the host's helper in the host's
# mount namespace: pid_mode = "host" makes /proc/1/ns/mnt the host's, and
# privileged gives setns() and mount(2) the CAP_SYS_ADMIN they need there.
#
# Paths: a mount made in the host's namespace must be made at the HOST path.
# Nomad names targets under csi_plugin.stage_publish_base_dir (a path inside
# the container; default /local/csi) and binds the host directory
# <client state_dir>/csi/node/<plugin id> at it, with bidirectional
# propagation. Setting stage_publish_base_dir to that host directory makes
# the two paths the same, so the host-side mount is where Nomad expects it and
# the container sees it too.
#
# Client requirements: the docker plugin's allow_privileged = true, the
# Lustre client on the host (/sbin/mount.lustre, the lustre module), and
# client_state_dir below equal to the client's state_dir (`-var` to change).

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
  plugin_dir = "${var.client_state_dir}/csi/node/${var.driver_name}"
}

job "lustre-csi-node" {
  type = "system"

  group "node" {
    task "plugin" {
      driver = "docker"

      config {
        image      = var.image
        privileged = true
        pid_mode   = "host"
        args = [
          "node",
          "--nodeid=${node.unique.name}",
          "--drivername=${var.driver_name}",
          "--endpoint=unix:///csi/csi.sock",
          "--mount-namespace=/proc/1/ns/mnt",
          "--mount-helper=/sbin/mount.lustre",
          # Inside the bound plugin directory: the same path on both sides.
          "--working-mount-dir=${local.plugin_dir}/work",
          # One Lustre client per file system, in <working dir>/clients.
          "--lustre-client=shared",
        ]
      }

      csi_plugin {
        id                     = var.driver_name
        type                   = "node"
        mount_dir              = "/csi"
        stage_publish_base_dir = local.plugin_dir
      }

      # memory is the docker driver's hard limit, and the helper processes
      # the driver starts (mount.lustre, one per mount in flight, at most
      # --max-concurrent-mounts = 8) count against it. Measured by
      # bench/node_memory_bench.sh (node and children summed, a publish storm
      # of 16 at once): node 13.6 MB peak; 27 MB with 8 small stand-in helpers
      # in flight; a dynamically linked mount program peaks at 2.7 MB. 96 MB
      # allows 8 helpers of 8 MB each over the node's peak, with room to spare.
      resources {
        cpu    = 50
        memory = 96
      }
    }
  }
}
