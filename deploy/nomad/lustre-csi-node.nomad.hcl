# The node plugin on every Nomad client. Nomad's csi_plugin block gives the
# task a socket directory at mount_dir and discovers the plugin there.
job "lustre-csi-node" {
  type = "system"

  group "node" {
    task "plugin" {
      driver = "docker"

      config {
        image      = "lustre-csi:v0.1.0"
        privileged = true
        args = [
          "node",
          "--nodeid=${node.unique.name}",
          "--endpoint=unix:///csi/csi.sock",
        ]
      }

      csi_plugin {
        id        = "azurelustre.csi.azure.com"
        type      = "node"
        mount_dir = "/csi"
      }

      resources {
        cpu    = 50
        memory = 32
      }
    }
  }
}
