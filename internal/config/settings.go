package config

import (
	"encoding/json"
	"reflect"
	"sort"
	"strings"
)

// unsharedKeys are the keys Settings leaves out: a daemon picks its own
// listen address and ports, and a stdio session and its daemon share the
// data dir by definition.
var unsharedKeys = map[string]bool{"http": true, "stdio": true, "data_dir": true, "engine_port": true, "ui_port": true}

// Settings are the configuration's values that shape what durawait
// serves, by TOML key (and "config" for the file), each as JSON: what a
// stdio session compares with the daemon it would share.
func (c Config) Settings() map[string]json.RawMessage {
	out := map[string]json.RawMessage{}
	v := reflect.ValueOf(c)
	for i := range v.NumField() {
		key, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("toml"), ",")
		if key == "" || key == "-" || unsharedKeys[key] {
			continue
		}
		if b, err := json.Marshal(v.Field(i).Interface()); err == nil {
			out[key] = b
		}
	}
	out["config"], _ = json.Marshal(c.File)
	return out
}

// SettingsDiff lists the keys whose values differ between a and b,
// sorted.
func SettingsDiff(a, b map[string]json.RawMessage) []string {
	var keys []string
	for k, va := range a {
		if vb, ok := b[k]; !ok || string(va) != string(vb) {
			keys = append(keys, k)
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	return keys
}
