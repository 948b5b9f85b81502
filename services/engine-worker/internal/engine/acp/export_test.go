package acp

// DecodeUpdate exposes decodeUpdate to the package's external tests.
var DecodeUpdate = decodeUpdate
