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

// PathSetting is the key of Settings under which the environment's PATH
// is compared: it is where agent CLIs are found when agents.path is not set.
const PathSetting = "PATH"

// Settings are the configuration's values that shape what durawait
// serves, by TOML key (and "config" for the file), each as JSON: what a
// stdio session compares with the daemon it would share. When agents are
// configured without agents.path, the CLIs are found on durawait's own
// PATH, so getenv("PATH") is one of them (PathSetting).
func (c Config) Settings(getenv func(string) string) map[string]json.RawMessage {
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
	if c.agentsUseOwnPATH() {
		out[PathSetting], _ = json.Marshal(getenv("PATH"))
	}
	return out
}

// agentsUseOwnPATH reports whether an agent CLI may be looked up on
// durawait's own PATH: agents are configured, agents.path is not set, and
// some provider's env does not set PATH itself.
func (c Config) agentsUseOwnPATH() bool {
	if len(c.Agents.Path) > 0 {
		return false
	}
	for _, p := range c.Agents.Providers {
		if _, own := p.Env["PATH"]; !own {
			return true
		}
	}
	return false
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
