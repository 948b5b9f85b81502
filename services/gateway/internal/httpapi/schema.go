package httpapi

import (
	"encoding/json"
	"fmt"
	"path"
	"reflect"
	"strings"
	"time"

	"clopen.dev/pkg/events"
	"clopen.dev/services/gateway/api"
)

// schemas derives OpenAPI 3.0 schemas from the Go types the handlers
// exchange, so the document describes exactly what is encoded and decoded.
// Named struct types become components referred to by $ref.
type schemas struct {
	defs  map[string]any
	names map[reflect.Type]string
}

func newSchemas() *schemas {
	return &schemas{defs: map[string]any{}, names: map[reflect.Type]string{}}
}

var (
	timeType = reflect.TypeFor[time.Time]()
	rawType  = reflect.TypeFor[json.RawMessage]()
)

// enums lists the vocabularies a string type is restricted to.
var enums = map[reflect.Type][]string{
	reflect.TypeFor[events.EngineType]():     strs(events.EngineTypes()),
	reflect.TypeFor[events.RunStateName]():   strs(events.RunStates()),
	reflect.TypeFor[events.Modality]():       {"text", "image", "audio", "video", "pdf"},
	reflect.TypeFor[events.AuthMode]():       {string(events.AuthChatGPT), string(events.AuthAPIKey)},
	reflect.TypeFor[events.FileChangeKind](): strs(events.FileChangeKinds()),
	reflect.TypeFor[api.SourceKind]():        strs(api.SourceKinds()),
	reflect.TypeFor[events.BudgetUnit]():     {string(events.BudgetTokens), string(events.BudgetUSD)},
	reflect.TypeFor[events.BudgetPeriod]():   strs(events.BudgetPeriods()),
}

func strs[T ~string](vs []T) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = string(v)
	}
	return out
}

// of returns the schema of t.
func (s *schemas) of(t reflect.Type) map[string]any {
	switch {
	case t == timeType:
		return map[string]any{"type": "string", "format": "date-time"}
	case t == rawType:
		return map[string]any{"description": "any JSON value"}
	}
	if vs, ok := enums[t]; ok {
		return map[string]any{"type": "string", "enum": vs}
	}
	switch t.Kind() {
	case reflect.Pointer:
		return s.of(t.Elem())
	case reflect.Struct:
		if t.Name() == "" {
			return s.object(t)
		}
		return map[string]any{"$ref": "#/components/schemas/" + s.component(t)}
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return map[string]any{"type": "string", "format": "byte"}
		}
		return map[string]any{"type": "array", "items": s.of(t.Elem())}
	case reflect.Map:
		return map[string]any{"type": "object", "additionalProperties": s.of(t.Elem())}
	case reflect.Interface:
		return map[string]any{"type": "object", "description": "a " + t.Name() + " (see pkg/events)"}
	case reflect.String:
		return map[string]any{"type": "string"}
	case reflect.Bool:
		return map[string]any{"type": "boolean"}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return map[string]any{"type": "integer", "format": "int64"}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return map[string]any{"type": "integer", "format": "int64", "minimum": 0}
	case reflect.Float32, reflect.Float64:
		return map[string]any{"type": "number"}
	}
	panic(fmt.Sprintf("openapi: no schema for %s", t))
}

// component registers a named struct and returns its component name. Two
// types of one name in different packages get their package as a prefix.
func (s *schemas) component(t reflect.Type) string {
	if n, ok := s.names[t]; ok {
		return n
	}
	name := t.Name()
	if _, taken := s.defs[name]; taken {
		pkg := path.Base(t.PkgPath())
		name = strings.ToUpper(pkg[:1]) + pkg[1:] + name
	}
	s.names[t] = name
	s.defs[name] = nil // reserve the name before recursing
	s.defs[name] = s.object(t)
	return name
}

// field is the schema of a struct field: its type's, with the field's doc
// tag as its description, and nullable when it is a pointer that is
// always encoded (no omitempty), so null is one of its values.
func (s *schemas) field(f reflect.StructField) map[string]any {
	sch := s.of(f.Type)
	doc := f.Tag.Get("doc")
	_, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
	nullable := f.Type.Kind() == reflect.Pointer && !strings.Contains(opts, "omitempty")
	if doc == "" && !nullable {
		return sch
	}
	if _, ref := sch["$ref"]; ref { // a $ref takes no siblings in OpenAPI 3.0
		sch = map[string]any{"allOf": []any{sch}}
	}
	if doc != "" {
		sch["description"] = doc
	}
	if nullable {
		sch["nullable"] = true
	}
	return sch
}

// object describes a struct's JSON fields; embedded structs without a tag
// are flattened, as encoding/json does.
func (s *schemas) object(t reflect.Type) map[string]any {
	props := map[string]any{}
	var required []string
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		for f := range t.Fields() {
			tag := f.Tag.Get("json")
			if tag == "-" || (!f.IsExported() && !f.Anonymous) {
				continue
			}
			name, opts, _ := strings.Cut(tag, ",")
			if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
				walk(f.Type)
				continue
			}
			if name == "" {
				name = f.Name
			}
			props[name] = s.field(f)
			if !strings.Contains(opts, "omitempty") && f.Type.Kind() != reflect.Pointer {
				required = append(required, name)
			}
		}
	}
	walk(t)
	o := map[string]any{"type": "object", "properties": props}
	if len(required) > 0 {
		o["required"] = required
	}
	return o
}

var reflectErrorType = reflect.TypeFor[api.Error]()
