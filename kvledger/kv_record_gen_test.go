package kvledger

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"go/format"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/natscoord/natscoord/events"
)

// The stored record's encoder and fast decoder (kv_record_codec.go) are
// generated here from the one definition of the format, the json tags of
// TaskState and kvRecord, so they cannot drift from what encoding/json
// reads and writes (snapshots, the CLI, the slow decode path).

var updateCodec = flag.Bool("update", false, "rewrite kv_record_codec.go from the record's json tags")

const codecFile = "kv_record_codec.go"

// TestRecordCodecGenerated fails when kv_record_codec.go is not what the
// tags give today: a field added, renamed or given another omit rule
// without regenerating (go test -run TestRecordCodecGenerated -update
// ./kvledger/).
func TestRecordCodecGenerated(t *testing.T) {
	fields, err := deriveFields(reflect.TypeFor[kvRecord]())
	if err != nil {
		t.Fatal(err)
	}
	src, err := generateRecordCodec(fields)
	if err != nil {
		t.Fatal(err)
	}
	if *updateCodec {
		if err := os.WriteFile(codecFile, src, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	have, err := os.ReadFile(codecFile)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(have, src) {
		t.Fatalf("%s is not what the json tags of TaskState and kvRecord give; run go test -run TestRecordCodecGenerated -update ./kvledger/", codecFile)
	}
}

// TestDeriveFieldsRefuses: a tag or a Go type the generated code would
// not write and read exactly as encoding/json does is refused, not
// generated wrong.
func TestDeriveFieldsRefuses(t *testing.T) {
	type named struct{ time.Time }
	for _, typ := range []reflect.Type{
		reflect.TypeFor[struct {
			K string `json:"k"`
			N int    `json:"n,string"`
		}](),
		reflect.TypeFor[struct {
			K string  `json:"k"`
			F float64 `json:"f"`
		}](),
		reflect.TypeFor[struct {
			K string `json:"k,omitempty"`
		}](),
		reflect.StructOf([]reflect.StructField{ // one name twice (vet refuses it in a literal)
			{Name: "K", Type: reflect.TypeFor[string](), Tag: `json:"k"`},
			{Name: "A", Type: reflect.TypeFor[string](), Tag: `json:"a"`},
			{Name: "B", Type: reflect.TypeFor[string](), Tag: `json:"a"`},
		}),
		reflect.TypeFor[struct {
			K string `json:"k"`
			T named  `json:"t"`
		}](),
		reflect.TypeFor[struct {
			K string `json:"k"`
			//lint:ignore SA5008 a name JSON must escape is what the generator must refuse
			Q string `json:"q\"<"`
		}](),
	} {
		if fields, err := deriveFields(typ); err == nil {
			t.Errorf("%v: derived %+v", typ, fields)
		}
	}
}

// codecField is one field of the stored record as encoding/json sees it.
type codecField struct {
	name   string       // the JSON name
	goName string       // the selector on a *kvRecord
	typ    reflect.Type // its Go type
	kind   fieldKind
	omit   omitRule
}

type fieldKind uint8

const (
	kindString fieldKind = iota // any string type
	kindStatus                  // Status: the five statuses are shared, not copied
	kindEvent                   // events.Name: the ledger's names are shared
	kindUint                    // any uint64 type
	kindInt                     // any int type
	kindBool                    // bool
	kindTime                    // time.Time
	kindKeys                    // []IdempotencyKey
	kindAny                     // the payload
	kindRaw                     // json.RawMessage
)

type omitRule uint8

const (
	omitNever omitRule = iota
	omitEmpty          // omitempty: "", 0, false, a nil or empty slice, a nil interface (never a struct)
	omitZero           // omitzero: the zero value (a nil slice; a time's IsZero)
)

// deriveFields lists the JSON fields of struct t as encoding/json does
// for the shapes the record uses: exported fields named by their tag (or
// Go name), those of an untagged embedded struct in its place, a
// shallower field hiding a deeper one of the same name. It refuses what
// the generated code would not reproduce: a Go type without a kind (or
// with JSON methods of its own), the ",string" option, two fields of one
// name at one depth, a name that needs escaping, a first field that may
// be left out (the encoder writes it with the opening brace), more than
// 32 fields (the decoder's seen set).
func deriveFields(t reflect.Type) ([]codecField, error) {
	type found struct {
		codecField
		depth int
	}
	var all []found
	var walk func(t reflect.Type, depth int) error
	walk = func(t reflect.Type, depth int) error {
		for i := range t.NumField() {
			sf := t.Field(i)
			tag := sf.Tag.Get("json")
			if !sf.IsExported() && !sf.Anonymous || tag == "-" {
				continue
			}
			if sf.Anonymous && tag == "" && sf.Type.Kind() == reflect.Struct {
				if err := walk(sf.Type, depth+1); err != nil {
					return err
				}
				continue
			}
			name, opts, _ := strings.Cut(tag, ",")
			if name == "" {
				name = sf.Name
			}
			f := codecField{name: name, goName: sf.Name, typ: sf.Type}
			for _, o := range strings.Split(opts, ",") {
				switch {
				case o == "":
				case o == "omitempty" && f.omit == omitNever:
					f.omit = omitEmpty
				case o == "omitzero" && f.omit == omitNever:
					f.omit = omitZero
				default:
					return fmt.Errorf("record field %s: tag options %q", sf.Name, opts)
				}
			}
			var ok bool
			if f.kind, ok = kindOf(sf.Type); !ok {
				return fmt.Errorf("record field %s: no codec for type %v", sf.Name, sf.Type)
			}
			if _, zeroer := sf.Type.MethodByName("IsZero"); zeroer && f.kind != kindTime && f.omit == omitZero {
				return fmt.Errorf("record field %s: omitzero would call its IsZero", sf.Name)
			}
			all = append(all, found{f, depth})
		}
		return nil
	}
	if err := walk(t, 0); err != nil {
		return nil, err
	}
	var fields []codecField
	for _, f := range all {
		hidden := false
		for _, g := range all {
			if g.name == f.name && g != f {
				if g.depth == f.depth {
					return nil, fmt.Errorf("record field %q twice at one depth", f.name)
				}
				hidden = hidden || g.depth < f.depth
			}
		}
		if hidden {
			continue
		}
		if sf, ok := t.FieldByName(f.goName); !ok || sf.Type != f.typ {
			return nil, fmt.Errorf("record field %q: the selector %s reaches another field", f.name, f.goName)
		}
		if f.name == "" || strings.ContainsAny(f.name, "\"\\<>&`") || strings.ContainsFunc(f.name, func(r rune) bool { return r < 0x20 || r >= 0x7f }) {
			return nil, fmt.Errorf("record field %q needs escaping", f.name)
		}
		if len(fields) == 0 && f.omit != omitNever {
			return nil, fmt.Errorf("the first record field %q may be left out", f.name)
		}
		fields = append(fields, f.codecField)
	}
	if len(fields) > 32 {
		return nil, fmt.Errorf("%d record fields; the decoder's seen set holds 32", len(fields))
	}
	return fields, nil
}

// kindOf is the kind a value of Go type t is written and read as.
func kindOf(t reflect.Type) (fieldKind, bool) {
	switch {
	case t == reflect.TypeFor[Status]():
		return kindStatus, true
	case t == reflect.TypeFor[events.Name]():
		return kindEvent, true
	case t == reflect.TypeFor[time.Time]():
		return kindTime, true
	case t == reflect.TypeFor[[]IdempotencyKey]():
		return kindKeys, true
	case t == reflect.TypeFor[any]():
		return kindAny, true
	case t == reflect.TypeFor[json.RawMessage]():
		return kindRaw, true
	case hasJSONMethods(t):
		return 0, false // its own methods decide its JSON
	case t.Kind() == reflect.String:
		return kindString, true
	case t.Kind() == reflect.Uint64:
		return kindUint, true
	case t.Kind() == reflect.Int:
		return kindInt, true
	case t.Kind() == reflect.Bool:
		return kindBool, true
	}
	return 0, false
}

// hasJSONMethods reports whether encoding/json would call a method of t
// (or *t) instead of writing its value as its kind says.
func hasJSONMethods(t reflect.Type) bool {
	for _, i := range []reflect.Type{
		reflect.TypeFor[json.Marshaler](), reflect.TypeFor[json.Unmarshaler](),
		reflect.TypeFor[interface{ MarshalText() ([]byte, error) }](),
		reflect.TypeFor[interface{ UnmarshalText([]byte) error }](),
	} {
		if t.Implements(i) || reflect.PointerTo(t).Implements(i) {
			return true
		}
	}
	return false
}

// generateRecordCodec writes kv_record_codec.go for fields.
func generateRecordCodec(fields []codecField) ([]byte, error) {
	var w bytes.Buffer
	p := func(format string, args ...any) { fmt.Fprintf(&w, format+"\n", args...) }
	// One line, in the form tools recognise (go/ast.IsGenerated): linters
	// skip the file.
	p("// Code generated by TestRecordCodecGenerated (kv_record_gen_test.go) from the json tags of TaskState and kvRecord. DO NOT EDIT.")
	p("")
	p("package kvledger")
	p("")
	p("import (")
	p("\t\"strconv\"")
	p("\t\"time\"")
	p("")
	p("\t\"github.com/natscoord/natscoord/internal/jsonx\"")
	p(")")
	p("")
	p("// appendRecordFields appends the stored form of r, the fields in the")
	p("// order encoding/json writes them (kv_record_encode.go).")
	p("func appendRecordFields(b []byte, r *kvRecord) ([]byte, error) {")
	checked, times := false, false
	for _, f := range fields {
		checked = checked || f.kind == kindAny || f.kind == kindRaw || f.kind == kindTime
		times = times || f.kind == kindTime
	}
	if checked {
		p("var ok bool")
	}
	if times {
		p("var lastTime time.Time // the last time written, and its text")
		p("var lastText []byte")
	}
	lastTimeField := -1 // the last time field keeps nothing for a later one
	for i, f := range fields {
		if f.kind == kindTime {
			lastTimeField = i
		}
	}
	for i, f := range fields {
		key := "`,\"" + f.name + "\":`"
		if i == 0 {
			key = "`{\"" + f.name + "\":`" // with the opening brace
		}
		e := "r." + f.goName
		conv := func(base string) string {
			if f.typ.Name() == base && f.typ.PkgPath() == "" {
				return e
			}
			return base + "(" + e + ")"
		}
		var guard, body string
		switch f.kind {
		case kindString, kindStatus, kindEvent:
			if f.omit != omitNever {
				body = "b = jsonx.AppendOptional(b, " + key + ", " + conv("string") + ")"
			} else {
				body = "b = jsonx.AppendString(append(b, " + key + "...), " + conv("string") + ")"
			}
		case kindUint:
			guard = e + " != 0"
			body = "b = strconv.AppendUint(append(b, " + key + "...), " + conv("uint64") + ", 10)"
		case kindInt:
			guard = e + " != 0"
			body = "b = strconv.AppendInt(append(b, " + key + "...), int64(" + e + "), 10)"
		case kindBool:
			if f.omit != omitNever {
				guard = e
				body = "b = append(b, `,\"" + f.name + "\":true`...)"
			} else {
				body = "b = strconv.AppendBool(append(b, " + key + "...), " + conv("bool") + ")"
			}
		case kindTime:
			if f.omit == omitZero {
				guard = "!" + e + ".IsZero()" // omitempty never leaves out a struct
			}
			// Inline, as the hand-written encoder had it: the last time's
			// text is reused for the same instant (an insert's two times).
			body = "b = append(b, " + key + "...)\n" +
				"if lastText != nil && " + e + " == lastTime {\nb = append(b, lastText...)\n} else {\n" +
				"n := len(b)\nif b, ok = jsonx.AppendTime(b, " + e + "); !ok {\nreturn b, fieldError(\"" + f.name + "\", timeError(" + e + "))\n}\n" +
				"lastTime, lastText = " + e + ", b[n:]\n}"
			if i == lastTimeField {
				body = strings.Replace(body, "n := len(b)\n", "", 1)
				body = strings.Replace(body, "lastTime, lastText = "+e+", b[n:]\n", "", 1)
			}
			if f.omit == omitEmpty {
				guard = ""
			}
		case kindKeys, kindRaw:
			switch f.omit {
			case omitEmpty:
				guard = "len(" + e + ") > 0"
			case omitZero:
				guard = e + " != nil"
			}
			if f.kind == kindKeys {
				body = "b = appendKeys(append(b, " + key + "...), " + e + ")"
			} else {
				body = "if b, ok = jsonx.AppendMarshaled(append(b, " + key + "...), " + e + "); !ok {\nreturn b, fieldError(\"" + f.name + "\", jsonError(" + e + "))\n}"
				if f.omit == omitNever {
					body = "if " + e + " == nil {\nb = append(b, " + key[:len(key)-1] + "null`...)\n} else {\n" + body + "\n}"
				}
			}
		case kindAny:
			guard = e + " != nil"
			body = "if b, ok = jsonx.AppendValue(append(b, " + key + "...), " + e + ", 0); !ok {\nreturn b, fieldError(\"" + f.name + "\", jsonError(" + e + "))\n}"
		}
		if f.omit == omitNever || guard == "" {
			p("%s", body)
		} else {
			p("if %s {\n%s\n}", guard, body)
		}
	}
	p("return append(b, '}'), nil")
	p("}")
	p("")
	p("// recordField reads the value of the field called name into r and")
	p("// returns the field's bit, to refuse repeats; false declines")
	p("// (decodeRecordFast, kv_record_decode.go).")
	p("func recordField(d *jsonx.Scanner, name []byte, r *kvRecord, share string) (uint32, bool) {")
	p("switch string(name) {")
	for i, f := range fields {
		e := "&r." + f.goName
		ptr := func(base string) string {
			if f.typ.Name() == base && f.typ.PkgPath() == "" {
				return e
			}
			return "(*" + base + ")(" + e + ")"
		}
		var call string
		switch f.kind {
		case kindString:
			call = "decodeString(d, " + ptr("string") + ", share, r)"
		case kindStatus:
			call = "decodeStatus(d, " + e + ")"
		case kindEvent:
			call = "decodeEvent(d, " + e + ")"
		case kindUint:
			call = "d.UintInto(" + ptr("uint64") + ")"
		case kindInt:
			call = "d.IntInto(" + ptr("int") + ")"
		case kindBool:
			call = "d.BoolInto(" + ptr("bool") + ")"
		case kindTime:
			call = "d.TimeInto(" + e + ")"
		case kindKeys:
			call = "decodeNeeds(d, " + e + ")"
		case kindAny:
			call = "decodePayload(d, " + e + ")"
		case kindRaw:
			call = "decodeRaw(d, " + e + ")"
		}
		p("case %q:", f.name)
		p("return 1 << %d, %s", i, call)
	}
	p("}")
	p("return 0, false")
	p("}")
	return format.Source(w.Bytes())
}

// TestDeriveFieldsFollowsEncodingJSON: the fields derived from the tags
// are the keys json.Marshal writes for a record with every field set, in
// its order (the embedded TaskState's, kvRecord.Rev hiding
// TaskState.Rev, then Ins).
func TestDeriveFieldsFollowsEncodingJSON(t *testing.T) {
	fields, err := deriveFields(reflect.TypeFor[kvRecord]())
	if err != nil {
		t.Fatal(err)
	}
	var r kvRecord
	v := reflect.ValueOf(&r).Elem()
	var fill func(v reflect.Value)
	fill = func(v reflect.Value) {
		for i := range v.NumField() {
			f := v.Field(i)
			switch {
			case f.Type() == reflect.TypeFor[time.Time]():
				f.Set(reflect.ValueOf(time.Unix(1, 0).UTC()))
			case f.Kind() == reflect.Struct:
				fill(f)
			case f.Kind() == reflect.String:
				f.SetString("x")
			case f.Kind() == reflect.Uint64:
				f.SetUint(1)
			case f.Kind() == reflect.Int:
				f.SetInt(1)
			case f.Kind() == reflect.Bool:
				f.SetBool(true)
			case f.Type() == reflect.TypeFor[json.RawMessage]():
				f.SetBytes([]byte("1"))
			case f.Kind() == reflect.Slice:
				f.Set(reflect.Append(f, reflect.New(f.Type().Elem()).Elem()))
			case f.Kind() == reflect.Interface:
				f.Set(reflect.ValueOf("x"))
			default:
				t.Fatalf("fill: %v", f.Type())
			}
		}
	}
	fill(v)
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	// The object's keys, in order: every value is skipped whole.
	dec := json.NewDecoder(bytes.NewReader(b))
	var keys []string
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("%s: %v %v", b, tok, err)
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, tok.(string))
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			t.Fatal(err)
		}
	}
	var names []string
	for _, f := range fields {
		names = append(names, f.name)
	}
	if !reflect.DeepEqual(keys, names) {
		t.Fatalf("json.Marshal writes %v, derived %v", keys, names)
	}
	if got, err := appendRecordFields(nil, &r); err != nil || !bytes.Equal(got, b) {
		t.Fatalf("generated %s (%v), json.Marshal %s", got, err, b)
	}
}
