# The controller plugin, one or two per cluster.
job "lustre-csi-controller" {
  type = "service"

  group "controller" {
    count = 2

    task "plugin" {
      driver = "docker"

      config {
        image = "lustre-csi:v0.1.0"
        args = [
          "controller",
          "--endpoint=unix:///csi/csi.sock",
        ]
      }

      csi_plugin {
        id        = "azurelustre.csi.azure.com"
        type      = "controller"
        mount_dir = "/csi"
      }

      resources {
        cpu    = 50
        memory = 32
      }
    }
  }
}
