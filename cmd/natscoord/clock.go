package main

import "github.com/natscoord/natscoord/internal/clock"

// wall is the CLI's clock, the one place it reads the time from (the
// stamps it writes into records, the phases it shows, the elapsed times
// it prints). The CLI is an application on real time: the system clock.
// Its timers (a command's grace, --timeout, --wait, a read deadline)
// bound waits on processes, the network and the user, in real time too.
var wall = clock.Real()
