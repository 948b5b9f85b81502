package events

import "testing"

func BenchmarkDecodeOutput(b *testing.B) {
	data, err := EncodeOutput(goldenOutputs["assistant"])
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := DecodeOutput(data); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEncodeOutput(b *testing.B) {
	o := goldenOutputs["assistant"]
	for b.Loop() {
		if _, err := EncodeOutput(o); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeStreamDelta(b *testing.B) {
	data, err := Envelope{Run: "r", Seq: 1, Output: goldenOutputs["stream_event_delta"]}.MarshalJSON()
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := DecodeEnvelope(data); err != nil {
			b.Fatal(err)
		}
	}
}
