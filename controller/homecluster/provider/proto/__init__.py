"""Generated protobuf / gRPC code for the externalgrpc provider. Do not edit the *_pb2* files:
change the .proto next to them and run `homecluster proto`."""
