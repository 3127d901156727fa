// Checks the generated descriptors against facts of the CSI v1.12.0 and
// kubelet registration wire contracts, so that an edit that renames or
// renumbers something fails here rather than in a cluster.
#include <string>

#include "google/protobuf/descriptor.h"
#include "gtest/gtest.h"
#include "proto/csi.pb.h"
#include "proto/manager.pb.h"
#include "proto/pluginregistration.pb.h"

namespace {

using google::protobuf::DescriptorPool;

struct ServiceCase {
  const char* service;
  int methods;
};

TEST(WireContractTest, ServicesAndMethodCounts) {
  const ServiceCase cases[] = {{"csi.v1.Identity", 3},
                               {"csi.v1.Controller", 15},
                               {"csi.v1.Node", 8},
                               {"csi.v1.GroupController", 4},
                               {"csi.v1.SnapshotMetadata", 2},
                               {"pluginregistration.Registration", 2}};
  // Force the generated files to register with the pool.
  csi::v1::ProbeRequest probe;
  pluginregistration::InfoRequest info;
  for (const ServiceCase& c : cases) {
    const auto* service = DescriptorPool::generated_pool()->FindServiceByName(c.service);
    ASSERT_NE(service, nullptr) << c.service;
    EXPECT_EQ(service->method_count(), c.methods) << c.service;
  }
}

struct FieldCase {
  const char* message;
  const char* field;
  int number;
};

TEST(WireContractTest, FieldNumbers) {
  const FieldCase cases[] = {
      {"csi.v1.GetPluginInfoResponse", "vendor_version", 2},
      {"csi.v1.ProbeResponse", "ready", 1},
      {"csi.v1.CreateVolumeRequest", "parameters", 4},
      {"csi.v1.CreateVolumeRequest", "accessibility_requirements", 7},
      {"csi.v1.CreateVolumeRequest", "mutable_parameters", 8},
      {"csi.v1.Volume", "volume_context", 3},
      {"csi.v1.VolumeCapability", "mount", 2},
      {"csi.v1.VolumeCapability", "access_mode", 3},
      {"csi.v1.VolumeCapability.MountVolume", "mount_flags", 2},
      {"csi.v1.VolumeCapability.MountVolume", "volume_mount_group", 3},
      {"csi.v1.NodeStageVolumeRequest", "staging_target_path", 3},
      {"csi.v1.NodePublishVolumeRequest", "target_path", 4},
      {"csi.v1.NodePublishVolumeRequest", "readonly", 6},
      {"csi.v1.NodePublishVolumeRequest", "volume_context", 8},
      {"csi.v1.NodeGetVolumeStatsRequest", "staging_target_path", 3},
      {"csi.v1.NodeGetVolumeStatsResponse", "volume_condition", 2},
      {"csi.v1.NodeGetInfoResponse", "max_volumes_per_node", 2},
      {"csi.v1.NodeGetInfoResponse", "accessible_topology", 3},
      {"csi.v1.ControllerExpandVolumeRequest", "volume_id", 1},
      {"csi.v1.ControllerExpandVolumeRequest", "capacity_range", 2},
      {"csi.v1.ControllerExpandVolumeRequest", "volume_capability", 4},
      {"csi.v1.ControllerExpandVolumeResponse", "capacity_bytes", 1},
      {"csi.v1.ControllerExpandVolumeResponse", "node_expansion_required", 2},
      {"csi.v1.PluginCapability", "volume_expansion", 2},
      {"pluginregistration.PluginInfo", "supported_versions", 4},
      {"pluginregistration.RegistrationStatus", "error", 2},
  };
  for (const FieldCase& c : cases) {
    const auto* message = DescriptorPool::generated_pool()->FindMessageTypeByName(c.message);
    ASSERT_NE(message, nullptr) << c.message;
    const auto* field = message->FindFieldByName(c.field);
    ASSERT_NE(field, nullptr) << c.message << "." << c.field;
    EXPECT_EQ(field->number(), c.number) << c.message << "." << c.field;
  }
}

TEST(WireContractTest, EnumValues) {
  EXPECT_EQ(csi::v1::VolumeCapability::AccessMode::MULTI_NODE_MULTI_WRITER, 5);
  EXPECT_EQ(csi::v1::VolumeCapability::AccessMode::SINGLE_NODE_MULTI_WRITER, 7);
  EXPECT_EQ(csi::v1::NodeServiceCapability::RPC::STAGE_UNSTAGE_VOLUME, 1);
  EXPECT_EQ(csi::v1::NodeServiceCapability::RPC::GET_VOLUME_STATS, 2);
  EXPECT_EQ(csi::v1::NodeServiceCapability::RPC::VOLUME_CONDITION, 4);
  EXPECT_EQ(csi::v1::NodeServiceCapability::RPC::VOLUME_MOUNT_GROUP, 6);
  EXPECT_EQ(csi::v1::PluginCapability::Service::CONTROLLER_SERVICE, 1);
  EXPECT_EQ(csi::v1::ControllerServiceCapability::RPC::CREATE_DELETE_VOLUME, 1);
  EXPECT_EQ(csi::v1::ControllerServiceCapability::RPC::GET_SNAPSHOT, 15);
  EXPECT_EQ(csi::v1::ControllerServiceCapability::RPC::EXPAND_VOLUME, 9);
  EXPECT_EQ(csi::v1::PluginCapability::VolumeExpansion::ONLINE, 1);
}

TEST(WireContractTest, SecretsAreMarked) {
  const auto* message =
      DescriptorPool::generated_pool()->FindMessageTypeByName("csi.v1.NodePublishVolumeRequest");
  ASSERT_NE(message, nullptr);
  const auto* secrets = message->FindFieldByName("secrets");
  ASSERT_NE(secrets, nullptr);
  EXPECT_TRUE(secrets->options().GetExtension(csi::v1::csi_secret));
}

TEST(WireContractTest, ManagerApiRegisters) {
  lustre_csi::manager::v1::Plugin plugin;  // links the generated file
  const auto* service =
      DescriptorPool::generated_pool()->FindServiceByName("lustre_csi.manager.v1.PluginManager");
  ASSERT_NE(service, nullptr);
  EXPECT_NE(service->FindMethodByName("MountVolume"), nullptr);
}

}  // namespace
