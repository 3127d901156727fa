#include "e2e/pod_spec.h"

#include <yaml-cpp/yaml.h>

#include <set>

#include "absl/strings/str_cat.h"

namespace lustre_csi::e2e {
namespace {

// Fills $(VAR) from `env`, as the kubelet does for command and args;
// unknown ones stay.
std::string Expand(const std::string& arg, const std::map<std::string, std::string>& env) {
  std::string out;
  for (size_t i = 0; i < arg.size();) {
    if (arg.compare(i, 2, "$(") == 0) {
      size_t end = arg.find(')', i);
      if (end != std::string::npos) {
        auto it = env.find(arg.substr(i + 2, end - i - 2));
        if (it != env.end()) {
          out += it->second;
          i = end + 1;
          continue;
        }
      }
    }
    out += arg[i++];
  }
  return out;
}

absl::StatusOr<HttpProbe> LoadProbe(const YAML::Node& probe, const std::vector<Port>& ports) {
  HttpProbe out;
  if (!probe) return out;
  YAML::Node get = probe["httpGet"];
  if (!get) return absl::UnimplementedError("only httpGet probes are read");
  out.path = get["path"].as<std::string>("/");
  std::string port = get["port"].as<std::string>();
  for (const Port& p : ports) {
    if (p.name == port) out.port = p.container_port;
  }
  if (out.port == 0 && !port.empty() && port.find_first_not_of("0123456789") == std::string::npos) {
    out.port = std::stoi(port);
  }
  if (out.port == 0) return absl::InvalidArgumentError("probe port " + port + " is not declared");
  return out;
}

}  // namespace

absl::StatusOr<PodSpec> LoadPodSpec(const std::string& yaml, const std::string& kind,
                                    const std::string& name, const std::string& container,
                                    const std::string& node_name) {
  std::vector<YAML::Node> docs;
  try {
    docs = YAML::LoadAll(yaml);
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("manifest is not YAML: ", e.what()));
  }
  for (const YAML::Node& doc : docs) {
    if (!doc.IsMap() || doc["kind"].as<std::string>("") != kind ||
        doc["metadata"]["name"].as<std::string>("") != name) {
      continue;
    }
    PodSpec spec;
    spec.workload = kind + "/" + name;
    spec.name = name;
    spec.namespace_ = doc["metadata"]["namespace"].as<std::string>("default");
    spec.container = container;
    YAML::Node pod = kind == "Pod" ? doc["spec"] : doc["spec"]["template"]["spec"];
    for (const char* key :
         {"initContainers", "securityContext", "hostIPC", "shareProcessNamespace"}) {
      if (pod[key])
        return absl::UnimplementedError(absl::StrCat("pod ", key, " is not translated"));
    }
    spec.host_pid = pod["hostPID"].as<bool>(false);
    spec.host_network = pod["hostNetwork"].as<bool>(false);
    for (const YAML::Node& v : pod["volumes"]) {
      Volume vol;
      vol.name = v["name"].as<std::string>();
      if (v["hostPath"]) {
        vol.host_path = v["hostPath"]["path"].as<std::string>();
        vol.host_path_type = v["hostPath"]["type"].as<std::string>("");
      } else if (!v["emptyDir"]) {
        return absl::UnimplementedError("volume " + vol.name + " is neither hostPath nor emptyDir");
      }
      spec.volumes[vol.name] = vol;
    }
    for (const YAML::Node& c : pod["containers"]) {
      if (c["name"].as<std::string>("") != container) continue;
      // What a runtime sees of a container; scheduling-only fields
      // (resources) do not reach it.
      static const std::set<std::string> kTranslated = {
          "name",           "image",     "imagePullPolicy", "command",
          "args",           "env",       "ports",           "livenessProbe",
          "readinessProbe", "resources", "securityContext", "volumeMounts"};
      for (const auto& field : c) {
        if (kTranslated.count(field.first.as<std::string>()) == 0) {
          return absl::UnimplementedError("container field " + field.first.as<std::string>() +
                                          " is not translated");
        }
      }
      spec.image = c["image"].as<std::string>("");
      if (YAML::Node sc = c["securityContext"]) {
        for (const auto& field : sc) {
          if (field.first.as<std::string>() != "privileged") {
            return absl::UnimplementedError("securityContext." + field.first.as<std::string>() +
                                            " is not translated");
          }
        }
        spec.privileged = sc["privileged"].as<bool>(false);
      }
      for (const YAML::Node& e : c["env"]) {
        std::string key = e["name"].as<std::string>();
        if (e["value"]) {
          spec.env[key] = e["value"].as<std::string>();
        } else if (YAML::Node from = e["valueFrom"];
                   from && from["fieldRef"] &&
                   from["fieldRef"]["fieldPath"].as<std::string>("") == "spec.nodeName") {
          spec.env[key] = node_name;
        } else {
          return absl::UnimplementedError("env " + key + " comes from where the test cannot say");
        }
      }
      for (const YAML::Node& a : c["command"])
        spec.command.push_back(Expand(a.as<std::string>(), spec.env));
      for (const YAML::Node& a : c["args"])
        spec.args.push_back(Expand(a.as<std::string>(), spec.env));
      for (const YAML::Node& m : c["volumeMounts"]) {
        VolumeMount vm;
        vm.name = m["name"].as<std::string>();
        vm.mount_path = m["mountPath"].as<std::string>();
        vm.propagation = m["mountPropagation"].as<std::string>("None");
        vm.read_only = m["readOnly"].as<bool>(false);
        if (spec.volumes.count(vm.name) == 0) {
          return absl::InvalidArgumentError("volumeMount " + vm.name + " has no volume");
        }
        spec.mounts.push_back(vm);
      }
      for (const YAML::Node& p : c["ports"]) {
        spec.ports.push_back({p["name"].as<std::string>(""), p["containerPort"].as<int>(0),
                              p["hostPort"].as<int>(0)});
      }
      absl::StatusOr<HttpProbe> liveness = LoadProbe(c["livenessProbe"], spec.ports);
      if (!liveness.ok()) return liveness.status();
      spec.liveness = *liveness;
      absl::StatusOr<HttpProbe> readiness = LoadProbe(c["readinessProbe"], spec.ports);
      if (!readiness.ok()) return readiness.status();
      spec.readiness = *readiness;
      return spec;
    }
    return absl::NotFoundError(absl::StrCat(kind, "/", name, " has no container ", container));
  }
  return absl::NotFoundError(absl::StrCat("no ", kind, "/", name, " in the manifest"));
}

}  // namespace lustre_csi::e2e
