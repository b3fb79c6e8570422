package events

import (
	"bytes"
	"encoding/json"
	"reflect"
	"sort"
	"testing"
)

// filled is a value of p's type with every field set, so a round trip
// shows each key.
func filled(t *testing.T, p Payload) Payload {
	v := reflect.New(reflect.TypeOf(p)).Elem()
	fill(t, v)
	return v.Interface().(Payload)
}

func fill(t *testing.T, v reflect.Value) {
	switch v.Kind() {
	case reflect.String:
		v.SetString("s-" + v.Type().Name())
	case reflect.Int, reflect.Int64:
		v.SetInt(7)
	case reflect.Uint64:
		v.SetUint(8)
	case reflect.Float64:
		v.SetFloat(1.5)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(t, v.Elem())
	case reflect.Struct:
		for i := range v.NumField() {
			fill(t, v.Field(i))
		}
	case reflect.Slice:
		if v.Type() == reflect.TypeOf(json.RawMessage(nil)) {
			v.SetBytes([]byte(`{"command":"ls"}`))
			return
		}
		v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		fill(t, v.Index(0))
	case reflect.Map:
		v.Set(reflect.MakeMap(v.Type()))
		k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		fill(t, k)
		fill(t, e)
		v.SetMapIndex(k, e)
	default:
		t.Fatalf("no filler for %s", v.Type())
	}
}

// Every kind decodes to what was encoded, and its keys come out sorted
// (the log's lines keep their order of keys without sorting them).
func TestEveryKindRoundTrips(t *testing.T) {
	t.Parallel()
	if len(Kinds()) < 40 {
		t.Fatalf("only %d kinds", len(Kinds()))
	}
	for _, kind := range Kinds() {
		zero := Decode(kind, []byte(`{}`))
		if zero.Kind() != kind {
			t.Errorf("%s decodes to %T, of kind %s", kind, zero, zero.Kind())
			continue
		}
		want := filled(t, zero)
		data, err := json.Marshal(want)
		if err != nil {
			t.Fatal(err)
		}
		if got := Decode(kind, data); !reflect.DeepEqual(got, want) {
			t.Errorf("%s:\n sent %#v\n read %#v", kind, want, got)
		}
		var keys []string
		dec := json.NewDecoder(bytes.NewReader(data))
		_, _ = dec.Token()
		for dec.More() {
			k, _ := dec.Token()
			keys = append(keys, k.(string))
			var skip json.RawMessage
			_ = dec.Decode(&skip)
		}
		if !sort.StringsAreSorted(keys) {
			t.Errorf("%s (%T): keys %v are not in order: declare the fields in the order of their keys", kind, want, keys)
		}
	}
}

// task_finished was written with "exitCode" by older versions.
func TestTaskEndReadsTheOldSpelling(t *testing.T) {
	t.Parallel()
	p, ok := Decode(TaskFinished, []byte(`{"status":"ERROR","exitCode":3}`)).(TaskEnd)
	if !ok || p.ExitCode == nil || *p.ExitCode != 3 || p.Status != "ERROR" {
		t.Fatalf("%#v", p)
	}
	p = Decode(TaskFinished, []byte(`{"status":"DONE","exit_code":0}`)).(TaskEnd)
	if p.ExitCode == nil || *p.ExitCode != 0 {
		t.Fatalf("%#v", p)
	}
}

// A kind this version does not know, or fields that do not fit, are kept.
func TestUnknownKindsAreKept(t *testing.T) {
	t.Parallel()
	p := Decode("future.thing", []byte(`{"a":1,"b":"x"}`))
	if o, ok := p.(Other); !ok || o.Kind() != "future.thing" || o.Fields["a"] != float64(1) || o.Fields["b"] != "x" {
		t.Fatalf("%#v", p)
	}
	p = Decode(TaskFinished, []byte(`{"status":42}`))
	if o, ok := p.(Other); !ok || o.Kind() != TaskFinished || o.Fields["status"] != float64(42) {
		t.Fatalf("%#v", p)
	}
}
