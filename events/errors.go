package events

import "errors"

var (
	// ErrInvalidName means an event's Name cannot be used as a subject.
	ErrInvalidName = errors.New("events: invalid event name")
	// ErrInvalidEvent means an event payload does not decode or lacks a
	// required field.
	ErrInvalidEvent = errors.New("events: invalid event")
	// ErrInvalidConfig means a subscription configuration was refused
	// before any I/O.
	ErrInvalidConfig = errors.New("events: invalid configuration")
)
