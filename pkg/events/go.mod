module clopen.dev/pkg/events

go 1.26.0
