package mcpserver

// ServeLines is serveLines, for the benchmarks beside the bare relay.
var ServeLines = (*Service).serveLines
