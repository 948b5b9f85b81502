// Package events is Clopen's event contract: every engine output, the bus
// envelope that carries it, the chat events clients receive, the subjects they
// travel on, and the JSON codec for all of it.
//
// The package uses the standard library only, so any service, client or tool
// can depend on it without pulling infrastructure in.
//
// Versioning is append-only: a type, field or enum value, once published, keeps
// its name and meaning. New variants and fields may be added; decoders keep
// unknown variants as opaque values that round-trip unchanged.
//
// On the wire every value is JSON with camelCase names and a "type"
// discriminator. Encoders write one canonical form: compact, fields in a
// fixed order, no HTML escaping, and null for an empty nullable string.
// Decoders are strict about what they know (a wrong JSON type or a value
// outside a vocabulary is a *DecodeError naming the field) and ignore the
// fields they do not know. A new enum value therefore needs its readers
// upgraded before its writers.
package events
