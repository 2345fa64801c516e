package config

import (
	"strings"
	"testing"
)

func TestCheckSchedule(t *testing.T) {
	for _, tt := range []struct {
		schedule string
		wantErr  string // "" means valid
	}{
		{"*/5 * * * *", ""},
		{"0 0 * * *", ""},
		{"0 9-17 * * 1-5", ""},
		{"0 9-17/2 * * MON-FRI", ""},
		{"30 2 1,15 jan,jul *", ""},
		{"5/15 * ? * ?", ""},
		{"0 0 31 12 6", ""},
		{"  0 0 * * *  ", ""},
		{"@hourly", ""},
		{"@daily", ""},
		{"@midnight", ""},
		{"@weekly", ""},
		{"@monthly", ""},
		{"@yearly", ""},
		{"@annually", ""},
		{"@every 10m", ""},
		{"@every 1h30m", ""},
		{"5m", ""},
		{"90s", ""},
		{"CRON_TZ=UTC 0 6 * * *", ""},
		{"TZ=UTC @daily", ""},

		{"", "empty schedule"},
		{"60 * * * *", "minute field \"60\": 60 is outside 0-59"},
		{"* 24 * * *", "hour field \"24\": 24 is outside 0-23"},
		{"* * 0 * *", "day of month field \"0\": 0 is outside 1-31"},
		{"* * * 13 *", "month field \"13\": 13 is outside 1-12"},
		{"* * * * 7", "day of week field \"7\": 7 is outside 0-6"},
		{"* * * foo *", `"foo" is not a number or a name (jan-dec)`},
		{"* * * * funday", `"funday" is not a number or a name (sun-sat)`},
		{"5-1 * * * *", `range "5-1" runs backwards`},
		{"*/0 * * * *", `step "0" is not a positive number`},
		{"*/x * * * *", `step "x" is not a positive number`},
		{"1/2/3 * * * *", `is not a positive number`},
		{"1,,2 * * * *", `"" is not a number`},
		{"*-5 * * * *", `"*" is not a number`},
		{"-1 * * * *", `"" is not a number`},
		{"+1 * * * *", `"+1" is not a number`},
		{"* * * *", "has 5 fields"},
		{"0 * * * * *", "has 5 fields"},
		{"@reboot", `unknown descriptor "@reboot"`},
		{"@every", `unknown descriptor "@every"`},
		{"@every ten", "@every needs a duration"},
		{"@every 100ms", "shorter than 1s"},
		{"0s", "shorter than 1s"},
		{"-5m", "shorter than 1s"},
		{"5 minutes", "has 5 fields"},
		{"soon", "not a duration"},
		{"TZ=Mars/Olympus 0 0 * * *", `unknown time zone "Mars/Olympus"`},
		{"TZ=UTC", "must be followed by a schedule"},
		{"TZ=UTC 5m", "applies to a cron expression or descriptor"},
	} {
		t.Run(tt.schedule, func(t *testing.T) {
			err := checkSchedule(tt.schedule)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("checkSchedule(%q) = %v, want nil", tt.schedule, err)
			case tt.wantErr != "" && err == nil:
				t.Errorf("checkSchedule(%q) = nil, want an error containing %q", tt.schedule, tt.wantErr)
			case tt.wantErr != "" && !strings.Contains(err.Error(), tt.wantErr):
				t.Errorf("checkSchedule(%q) = %v, want an error containing %q", tt.schedule, err, tt.wantErr)
			}
		})
	}
}
