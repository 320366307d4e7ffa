package mcpserver

// ServeLines is serveLines, for the benchmarks beside the bare relay.
var ServeLines = (*Service).serveLines

// ServeSDK is serveSDK: the SDK's stateless handler, which the engine's
// own answers to the stateless era are compared with.
var ServeSDK = (*Service).serveSDK
