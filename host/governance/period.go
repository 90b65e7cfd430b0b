package governance

import "time"

// Period is a budget or rate-limit window. Windows are calendar-aligned in
// UTC (a "day" is 00:00-24:00 UTC, a "week" starts Monday, a "month" on the
// 1st): every node computes the same window without shared state, the quota
// endpoint can say exactly when a window resets, and retry_after_ms is
// exact. The cost is that a burst may straddle two windows.
type Period string

// Periods.
const (
	PeriodMinute Period = "minute"
	PeriodHour   Period = "hour"
	PeriodDay    Period = "day"
	PeriodWeek   Period = "week"
	PeriodMonth  Period = "month"
)

const periodNames = "minute, hour, day, week, month"

func (p Period) valid() bool {
	switch p {
	case PeriodMinute, PeriodHour, PeriodDay, PeriodWeek, PeriodMonth:
		return true
	}
	return false
}

// window returns the start and end of the window holding t.
func (p Period) window(t time.Time) (start, end time.Time) {
	t = t.UTC()
	switch p {
	case PeriodMinute:
		start = t.Truncate(time.Minute)
		return start, start.Add(time.Minute)
	case PeriodHour:
		start = t.Truncate(time.Hour)
		return start, start.Add(time.Hour)
	case PeriodDay:
		start = time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
		return start, start.AddDate(0, 0, 1)
	case PeriodWeek:
		day := time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
		back := (int(day.Weekday()) + 6) % 7 // days since Monday
		start = day.AddDate(0, 0, -back)
		return start, start.AddDate(0, 0, 7)
	default: // month
		start = time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC)
		return start, start.AddDate(0, 1, 0)
	}
}
