%% fibra_bench: the Erlang/OTP peers of fibra's benchmark suite.
%%
%% Built and run by fibra-bench/src/peers/erlang.rs:
%%
%%   erlc -o <dir> fibra_bench.erl
%%   erl +P 1048576 -noinput -pa <dir> -run fibra_bench main <workload> name=value... runs=N
%%
%% Each workload does one warm-up run and N timed runs and prints one JSON
%% line per run: {"warmup":true,"seconds":0.0123,"result":499999500000}.
%% The harness checks every result. Every run happens in a fresh runner
%% process that links the long-lived processes it starts, so a crash ends
%% the run (and the program, with exit status 1) instead of hanging it.
%%
%% Erlang has processes and asynchronous mailboxes, not rendezvous
%% channels. Where a workload relies on a send waiting for its receiver
%% (chain, fan-out), the rendezvous is emulated: the receiver answers every
%% message it takes with an ack (chain), or asks for every value it takes
%% (fan-out), so each hop costs two messages. Ping-pong needs no emulation:
%% each ping already waits for its pong.
%%
%% The `remote` workloads run between two Erlang nodes (see "Distribution"
%% below); their runs are timed on the sending node.
-module(fibra_bench).
-export([main/1]).
%% Called on the nodes of the remote workloads (through peer:call/5).
-export([remote_host/0, remote_ping_pong/2, remote_throughput/2]).

main([Workload | Args]) ->
    Status =
        try
            Params = [parse_param(A) || A <- Args],
            Runs = param(runs, Params),
            case remote_workload(Workload, Params) of
                {ok, Fun, Arg} -> remote(Runs, Fun, Arg);
                none -> measure(Runs, workload(Workload, Params))
            end,
            0
        catch
            Class:Reason:Stack ->
                io:format(standard_error, "fibra_bench ~s: ~p:~p~n~p~n",
                          [Workload, Class, Reason, Stack]),
                1
        end,
    halt(Status);
main([]) ->
    io:format(standard_error,
              "usage: fibra_bench <workload> name=value... runs=N~n", []),
    halt(2).

%% "pairs=10" -> {pairs, 10}
parse_param(Arg) ->
    [Name, Value] = string:split(Arg, "="),
    {list_to_atom(Name), list_to_integer(Value)}.

param(Name, Params) ->
    case lists:keyfind(Name, 1, Params) of
        {Name, Value} -> Value;
        false -> error({missing_parameter, Name})
    end.

%% The run of each workload: a fun that does the work once and returns its
%% result (every workload's parameters are those of the Rust rows).
workload("ping-pong", Params) ->
    Pairs = param(pairs, Params),
    RoundTrips = param(round_trips, Params),
    fun() -> ping_pong(Pairs, RoundTrips) end;
workload("chain", Params) ->
    Links = param(links, Params),
    Messages = param(messages, Params),
    fun() -> chain(Links, Messages) end;
workload("fan-out", Params) ->
    Consumers = param(consumers, Params),
    Messages = param(messages, Params),
    fun() -> fan_out(Consumers, Messages) end;
workload("spawn-join", Params) ->
    Tasks = param(tasks, Params),
    fun() -> spawn_join(Tasks) end;
workload("asymmetric-mailbox", Params) ->
    N = param(iterations, Params),
    fun() -> asymmetric_mailbox(N) end;
workload("symmetric-mailbox", Params) ->
    N = param(iterations, Params),
    fun() -> symmetric_mailbox(N) end;
workload("switch-baseline", Params) ->
    N = param(iterations, Params),
    fun() -> switch_baseline(N) end;
workload("big-bang", Params) ->
    N = param(processes, Params),
    fun() -> big_bang(N) end;
workload("hackbench", Params) ->
    Groups = param(groups, Params),
    Messages = param(messages, Params),
    fun() -> hackbench(Groups, Messages) end;
workload("mandelbrot", Params) ->
    Size = param(size, Params),
    Tasks = param(tasks, Params),
    fun() -> mandelbrot(Size, Tasks) end;
workload("random", Params) ->
    Tasks = param(tasks, Params),
    Values = param(values, Params),
    fun() -> random(Tasks, Values) end;
workload("count", Params) ->
    Messages = param(messages, Params),
    fun() -> count(Messages) end;
workload("fjcreate", Params) ->
    Actors = param(actors, Params),
    fun() -> fjcreate(Actors) end;
workload("fjthrput", Params) ->
    Actors = param(actors, Params),
    Messages = param(messages, Params),
    fun() -> fjthrput(Actors, Messages) end;
workload("big", Params) ->
    Actors = param(actors, Params),
    Pings = param(pings, Params),
    fun() -> big(Actors, Pings) end;
workload("fib", Params) ->
    N = param(n, Params),
    fun() -> fib(N) end;
workload("par-fib", Params) ->
    N = param(n, Params),
    fun() -> par_fib(N) end;
workload("par-tak", Params) ->
    X = param(x, Params),
    Y = param(y, Params),
    Z = param(z, Params),
    fun() -> par_tak(X, Y, Z) end;
workload(Name, _) ->
    error({unknown_workload, Name}).

%% One warm-up run, then Runs timed runs, one JSON line each.
measure(Runs, Run) ->
    lists:foreach(
      fun(I) ->
              {Seconds, Result} = run_once(Run),
              io:format("{\"warmup\":~s,\"seconds\":~.9f,\"result\":~B}~n",
                        [I =:= 0, Seconds, Result])
      end,
      lists:seq(0, Runs)).

%% Runs Run in a fresh runner process, timed there; the runner's links make
%% any crash of the run's processes a crash of the runner, reported here.
run_once(Run) ->
    Main = self(),
    {Runner, Ref} =
        spawn_monitor(
          fun() ->
                  Start = erlang:monotonic_time(),
                  Result = Run(),
                  Elapsed = erlang:monotonic_time() - Start,
                  Ns = erlang:convert_time_unit(Elapsed, native, nanosecond),
                  Main ! {self(), Ns / 1.0e9, Result}
          end),
    receive
        {Runner, Seconds, Result} ->
            receive {'DOWN', Ref, process, Runner, _} -> ok end,
            {Seconds, Result};
        {'DOWN', Ref, process, Runner, Reason} ->
            error({run_failed, Reason})
    end.

%% ping-pong: Pairs pairs; each pinger sends I for I in 0..RoundTrips-1 and
%% waits for the ponger's reply I+1. Result: the sum of all replies.
ping_pong(Pairs, RoundTrips) ->
    Self = self(),
    Pingers = [spawn_link(fun() ->
                                  Ponger = spawn_link(fun ponger/0),
                                  Self ! {self(), pinger(Ponger, 0, RoundTrips, 0)}
                          end)
               || _ <- lists:seq(1, Pairs)],
    lists:sum([receive {Pinger, Sum} -> Sum end || Pinger <- Pingers]).

pinger(Ponger, I, RoundTrips, Sum) when I < RoundTrips ->
    Ponger ! {ping, self(), I},
    receive
        {pong, V} -> pinger(Ponger, I + 1, RoundTrips, Sum + V)
    end;
pinger(Ponger, _, _, Sum) ->
    Ponger ! stop,
    Sum.

ponger() ->
    receive
        {ping, From, V} ->
            From ! {pong, V + 1},
            ponger();
        stop ->
            ok
    end.

%% A rendezvous send: To acks every message it takes.
send(To, V) ->
    To ! {msg, self(), V},
    receive ack -> ok end.

%% chain: a sender process sends 0..Messages-1 through Links relay
%% processes to the runner, which sums them; `done` closes the chain.
chain(Links, Messages) ->
    Last = self(),
    First = lists:foldl(fun(_, Next) -> spawn_link(fun() -> relay(Next) end) end,
                        Last, lists:seq(1, Links)),
    spawn_link(fun() -> chain_send(First, 0, Messages) end),
    chain_sum(0).

chain_send(To, I, Messages) when I < Messages ->
    send(To, I),
    chain_send(To, I + 1, Messages);
chain_send(To, _, _) ->
    To ! done.

relay(Next) ->
    receive
        {msg, From, V} ->
            From ! ack,
            send(Next, V),
            relay(Next);
        done ->
            Next ! done
    end.

chain_sum(Sum) ->
    receive
        {msg, From, V} ->
            From ! ack,
            chain_sum(Sum + V);
        done ->
            Sum
    end.

%% fan-out: Consumers processes compete for the values 0..Messages-1 of one
%% producer: each asks for a value ({ready, Pid}) and the producer hands the
%% next one to whoever asked; when the values run out it answers `done`.
%% Each consumer reports its sum; result: the total.
fan_out(Consumers, Messages) ->
    Self = self(),
    Producer = spawn_link(fun() -> produce(0, Messages, Consumers) end),
    [spawn_link(fun() -> Self ! {sum, consume(Producer, 0)} end)
     || _ <- lists:seq(1, Consumers)],
    lists:sum([receive {sum, Sum} -> Sum end || _ <- lists:seq(1, Consumers)]).

produce(I, Messages, Consumers) when I < Messages ->
    receive {ready, Consumer} -> Consumer ! {value, I} end,
    produce(I + 1, Messages, Consumers);
produce(_, _, 0) ->
    ok;
produce(I, Messages, Consumers) ->
    receive {ready, Consumer} -> Consumer ! done end,
    produce(I, Messages, Consumers - 1).

consume(Producer, Sum) ->
    Producer ! {ready, self()},
    receive
        {value, V} -> consume(Producer, Sum + V);
        done -> Sum
    end.

%% spawn-join: the runner starts Tasks processes (process I sends I back and
%% ends) and joins them by receiving their values, in any order: Erlang has
%% no join handle. Result: the sum. These processes are not linked (a link
%% doubles the cost of a spawn here, and they cannot fail).
spawn_join(Tasks) ->
    Self = self(),
    spawn_all(Self, 0, Tasks),
    join_all(Tasks, 0).

spawn_all(Self, I, Tasks) when I < Tasks ->
    spawn(fun() -> Self ! {joined, I} end),
    spawn_all(Self, I + 1, Tasks);
spawn_all(_, _, _) ->
    ok.

join_all(0, Sum) ->
    Sum;
join_all(N, Sum) ->
    receive {joined, V} -> join_all(N - 1, Sum + V) end.

%% The `racket` group (Racket's mbox-test.ss): the workloads that fit
%% Erlang, whose processes have mailboxes but no semaphores or channels.

%% asymmetric-mailbox: a producer process sends 0..N-1 to a consumer
%% process, which receives N messages and sums them. Result: the sum.
asymmetric_mailbox(N) ->
    Self = self(),
    Consumer = spawn_link(fun() -> Self ! {sum, receive_sum(N, 0)} end),
    spawn_link(fun() -> send_all(Consumer, 0, N) end),
    receive {sum, Sum} -> Sum end.

send_all(To, I, N) when I < N ->
    To ! I,
    send_all(To, I + 1, N);
send_all(_, _, _) ->
    ok.

receive_sum(0, Sum) ->
    Sum;
receive_sum(N, Sum) ->
    receive V -> receive_sum(N - 1, Sum + V) end.

%% symmetric-mailbox: the initiator sends I for I in 0..N-1 to its peer
%% and waits for the reply I+1; the peer knows the initiator (as in
%% mbox-test.ss, messages carry no sender). Result: the sum of the replies.
symmetric_mailbox(N) ->
    Self = self(),
    spawn_link(fun() ->
                       Initiator = self(),
                       Peer = spawn_link(fun() -> reply(Initiator, N) end),
                       Self ! {sum, initiate(Peer, 0, N, 0)}
               end),
    receive {sum, Sum} -> Sum end.

initiate(Peer, I, N, Sum) when I < N ->
    Peer ! I,
    receive V -> initiate(Peer, I + 1, N, Sum + V) end;
initiate(_, _, _, Sum) ->
    Sum.

reply(_, 0) ->
    ok;
reply(To, N) ->
    receive V -> To ! V + 1 end,
    reply(To, N - 1).

%% switch-baseline: two processes each call erlang:yield() N times and
%% report how many times they did. Result: 2N.
switch_baseline(N) ->
    Self = self(),
    [spawn_link(fun() -> Self ! {yields, yield_times(N, 0)} end) || _ <- [1, 2]],
    lists:sum([receive {yields, Count} -> Count end || _ <- [1, 2]]).

yield_times(0, Count) ->
    Count;
yield_times(N, Count) ->
    erlang:yield(),
    yield_times(N - 1, Count + 1).

%% The `erlang` group (the Erlang-VM scalability study's benchmarks) and
%% the `savina` group (Savina's actor micro-benchmarks); the same work as
%% fibra-bench/src/workloads/actors/, see its module docs.

%% big-bang: every process pings every other and answers each ping with a
%% pong. Result: the pongs, N(N-1).
big_bang(N) ->
    Self = self(),
    Pids = [spawn_link(fun() -> bang_start(Self, N) end) || _ <- lists:seq(1, N)],
    [P ! {start, Pids} || P <- Pids],
    lists:sum([receive {bang_done, Pongs} -> Pongs end || _ <- Pids]).

bang_start(Main, N) ->
    %% Pings that arrive before the start stay in the mailbox.
    receive {start, Pids} -> ok end,
    Me = self(),
    [P ! {ping, Me} || P <- Pids, P =/= Me],
    bang_loop(Main, N - 1, N - 1, 0).

bang_loop(Main, 0, 0, Pongs) ->
    Main ! {bang_done, Pongs};
bang_loop(Main, Pings, PongsLeft, Pongs) ->
    receive
        {ping, From} ->
            From ! pong,
            bang_loop(Main, Pings - 1, PongsLeft, Pongs);
        pong ->
            bang_loop(Main, Pings, PongsLeft - 1, Pongs + 1)
    end.

%% hackbench: per group, 20 writers each send 0..Messages-1 to each of the
%% group's 20 listeners. Result: the sum the listeners took.
hackbench(Groups, Messages) ->
    Self = self(),
    lists:foreach(
      fun(_) ->
              Listeners = [spawn_link(fun() -> Self ! {listened, receive_sum(20 * Messages, 0)} end)
                           || _ <- lists:seq(1, 20)],
              [spawn_link(fun() -> send_rounds(Listeners, 0, Messages) end)
               || _ <- lists:seq(1, 20)]
      end,
      lists:seq(1, Groups)),
    lists:sum([receive {listened, Sum} -> Sum end || _ <- lists:seq(1, Groups * 20)]).

%% Sends I to every target, for I in I..Messages-1.
send_rounds(_, Messages, Messages) ->
    ok;
send_rounds(Targets, I, Messages) ->
    [T ! I || T <- Targets],
    send_rounds(Targets, I + 1, Messages).

%% mandelbrot: Tasks processes each compute the Size x Size image; the
%% runner waits for them in turn. Result: the iterations summed.
mandelbrot(Size, Tasks) ->
    in_turn([fun() -> mandel_image(Size) end || _ <- lists:seq(1, Tasks)]).

%% Starts a linked process per fun and receives their results in turn.
in_turn(Funs) ->
    Self = self(),
    Pids = [spawn_link(fun() -> Self ! {self(), F()} end) || F <- Funs],
    lists:sum([receive {P, V} -> V end || P <- Pids]).

mandel_image(Size) ->
    S = float(Size),
    lists:sum([mandel_row(Y * 3.0 / S - 1.5, S, Size, 0, 0) || Y <- lists:seq(0, Size - 1)]).

mandel_row(_, _, Size, Size, Acc) ->
    Acc;
mandel_row(Ci, S, Size, X, Acc) ->
    Cr = X * 3.0 / S - 2.0,
    mandel_row(Ci, S, Size, X + 1, Acc + mandel_point(Cr, Ci, 0.0, 0.0, 0)).

mandel_point(_, _, _, _, 255) ->
    255;
mandel_point(Cr, Ci, Zr, Zi, I) ->
    case Zr * Zr + Zi * Zi =< 4.0 of
        true -> mandel_point(Cr, Ci, Zr * Zr - Zi * Zi + Cr, 2.0 * Zr * Zi + Ci, I + 1);
        false -> I
    end.

%% random: process Seed sorts Values numbers of a 31-bit LCG seeded with
%% Seed, splits them, and returns the first of the upper half. Result:
%% their sum.
random(Tasks, Values) ->
    in_turn([fun() -> random_middle(Seed, Values) end || Seed <- lists:seq(1, Tasks)]).

lcg(X) ->
    (X * 1103515245 + 12345) band 16#7fffffff.

random_middle(Seed, Values) ->
    Sorted = lists:sort(lcg_list(Seed, Values, [])),
    {_, Upper} = lists:split(length(Sorted) div 2, Sorted),
    case Upper of
        [First | _] -> First;
        [] -> 0
    end.

lcg_list(_, 0, Acc) ->
    Acc;
lcg_list(X, N, Acc) ->
    Next = lcg(X),
    lcg_list(Next, N - 1, [Next | Acc]).

%% count: the runner sends 0..Messages-1 to a counter, then asks it for
%% the total.
count(Messages) ->
    Counter = spawn_link(fun() -> counter(0) end),
    send_rounds([Counter], 0, Messages),
    Counter ! {get, self()},
    receive {count, Total} -> Total end.

counter(Total) ->
    receive
        {get, From} -> From ! {count, Total};
        N -> counter(Total + N)
    end.

%% fjcreate: the runner creates Actors processes and sends each its index,
%% which it sends back before ending (unlinked, as in spawn-join).
fjcreate(Actors) ->
    Self = self(),
    fj_spawn(Self, 0, Actors),
    join_all(Actors, 0).

fj_spawn(_, Actors, Actors) ->
    ok;
fj_spawn(Self, I, Actors) ->
    Pid = spawn(fun() -> receive V -> Self ! {joined, V} end end),
    Pid ! I,
    fj_spawn(Self, I + 1, Actors).

%% fjthrput: the runner sends 0..Messages-1 to each of Actors processes,
%% round-robin; each reports its sum.
fjthrput(Actors, Messages) ->
    Self = self(),
    Workers = [spawn_link(fun() -> Self ! {sum, receive_sum(Messages, 0)} end)
               || _ <- lists:seq(1, Actors)],
    send_rounds(Workers, 0, Messages),
    lists:sum([receive {sum, Sum} -> Sum end || _ <- Workers]).

%% big: each process pings a pseudo-random process (LCG seeded with its
%% index) and waits for the pong, Pings times, answering others' pings
%% meanwhile; once all are done the runner stops them. Result: the pongs.
big(Actors, Pings) ->
    Self = self(),
    Pids = list_to_tuple([spawn_link(fun() -> big_start(Self, Seed, Actors, Pings) end)
                          || Seed <- lists:seq(1, Actors)]),
    [P ! {start, Pids} || P <- tuple_to_list(Pids)],
    Total = lists:sum([receive {big_done, A} -> A end || _ <- lists:seq(1, Actors)]),
    [P ! exit || P <- tuple_to_list(Pids)],
    Total.

big_start(Main, Seed, N, Pings) ->
    receive {start, Pids} -> ok end,
    big_loop(Main, Pids, N, Pings, big_ping(Pids, N, Seed), 0).

big_ping(Pids, N, X) ->
    Next = lcg(X),
    element(Next rem N + 1, Pids) ! {ping, self()},
    Next.

big_loop(Main, Pids, N, Pings, X, Answered) ->
    receive
        {ping, From} ->
            From ! pong,
            big_loop(Main, Pids, N, Pings, X, Answered);
        pong when Answered + 1 < Pings ->
            big_loop(Main, Pids, N, Pings, big_ping(Pids, N, X), Answered + 1);
        pong ->
            Main ! {big_done, Answered + 1},
            big_loop(Main, Pids, N, Pings, X, Answered + 1);
        exit ->
            ok
    end.

%% fib: a process per call of the naive recursive fib (unlinked, as in
%% spawn-join); each sends its value to its parent.
fib(N) ->
    Self = self(),
    spawn(fun() -> fib_actor(N, Self) end),
    receive {fib, V} -> V end.

fib_actor(N, Parent) when N < 2 ->
    Parent ! {fib, N};
fib_actor(N, Parent) ->
    Me = self(),
    spawn(fun() -> fib_actor(N - 1, Me) end),
    spawn(fun() -> fib_actor(N - 2, Me) end),
    receive {fib, A} -> receive {fib, B} -> Parent ! {fib, A + B} end end.

%% ---------------------------------------------------------------------
%% Distribution: the `remote` group.
%%
%% Two Erlang nodes on this machine talk over loopback TCP with Erlang's
%% own distribution protocol: `{Name, Node} ! Msg`. This program (not a
%% distributed node itself) starts a private epmd on a free loopback port,
%% then two nodes with the `peer` module (`-sname
%% fibra_bench_{a,b}_<pid>@localhost`, so no DNS is needed; ERL_EPMD_PORT
%% points them at the private epmd), and controls them over their standard
%% input and output (peer's `standard_io` connection). Node b hosts the
%% registered processes `pong` and `sink`; node a runs and times every run
%% and returns {Seconds, Result}. At the end both nodes are stopped and the
%% epmd is killed, whether the runs succeeded or not.

%% The remote workloads: which function node a runs, with what.
remote_workload("remote-ping-pong", Params) ->
    {ok, remote_ping_pong, param(round_trips, Params)};
remote_workload("remote-throughput", Params) ->
    {ok, remote_throughput, param(messages, Params)};
remote_workload(_, _) ->
    none.

remote(Runs, Fun, Arg) ->
    Port = free_port(),
    Epmd = start_epmd(Port),
    try
        Env = [{"ERL_EPMD_PORT", integer_to_list(Port)}],
        Args = ["-pa", filename:dirname(code:which(?MODULE))],
        Id = os:getpid(),
        Start = fun(Tag) ->
                        {ok, Peer, Node} =
                            peer:start_link(#{name => list_to_atom("fibra_bench_" ++ Tag ++ "_" ++ Id),
                                              host => "localhost",
                                              connection => standard_io,
                                              env => Env,
                                              args => Args}),
                        {Peer, Node}
                end,
        {A, _} = Start("a"),
        {B, NodeB} = Start("b"),
        try
            ok = peer:call(B, ?MODULE, remote_host, []),
            lists:foreach(
              fun(I) ->
                      {Seconds, Result} = peer:call(A, ?MODULE, Fun, [NodeB, Arg], infinity),
                      io:format("{\"warmup\":~s,\"seconds\":~.9f,\"result\":~B}~n",
                                [I =:= 0, Seconds, Result])
              end,
              lists:seq(0, Runs))
        after
            catch peer:stop(A),
            catch peer:stop(B)
        end
    after
        stop_epmd(Epmd, Port)
    end.

%% A loopback port that was free a moment ago.
free_port() ->
    {ok, Listen} = gen_tcp:listen(0, [{ip, {127, 0, 0, 1}}]),
    {ok, Port} = inet:port(Listen),
    ok = gen_tcp:close(Listen),
    Port.

%% Runs `epmd -port Port` in the foreground as a port program of this VM and
%% waits until it answers.
start_epmd(Port) ->
    Exe = case os:find_executable("epmd") of
              false -> error(epmd_not_found);
              Found -> Found
          end,
    P = integer_to_list(Port),
    Epmd = open_port({spawn_executable, Exe},
                     %% -relaxed_command_check: `epmd -kill` works even if a
                     %% node that is shutting down is still registered.
                     [{args, ["-port", P, "-address", "127.0.0.1",
                              "-relaxed_command_check"]}, exit_status,
                      %% Its log lines (e.g. at -kill) are not ours to print.
                      stderr_to_stdout]),
    wait_epmd(Exe, P, 250),
    Epmd.

wait_epmd(_, P, 0) ->
    error({epmd_did_not_start, list_to_integer(P)});
wait_epmd(Exe, P, Tries) ->
    case os:cmd(Exe ++ " -port " ++ P ++ " -names") of
        "epmd: up" ++ _ -> ok;
        _ -> timer:sleep(20), wait_epmd(Exe, P, Tries - 1)
    end.

%% `epmd -kill`, then wait for it to exit (asking again every 100 ms, for
%% up to 5 s).
stop_epmd(Epmd, Port) ->
    Exe = os:find_executable("epmd"),
    stop_epmd(Epmd, Exe ++ " -port " ++ integer_to_list(Port) ++ " -kill", Port, 50).

stop_epmd(_, _, Port, 0) ->
    io:format(standard_error, "fibra_bench: epmd on port ~B did not exit~n", [Port]);
stop_epmd(Epmd, Kill, Port, Tries) ->
    _ = os:cmd(Kill),
    receive
        {Epmd, {exit_status, _}} -> ok
    after 100 ->
            stop_epmd(Epmd, Kill, Port, Tries - 1)
    end.

%% On node b: the registered processes `pong` (answers {ping, From, V} with
%% {pong, V + 1}) and `sink` (counts and sums integers; {count, From} gets
%% {count, Count, Sum} and starts over). They outlive the call.
remote_host() ->
    Self = self(),
    spawn(fun() ->
                  register(pong, self()),
                  register(sink, spawn(fun() -> sink(0, 0) end)),
                  Self ! registered,
                  pong()
          end),
    receive registered -> ok end.

pong() ->
    receive
        {ping, From, V} ->
            From ! {pong, V + 1},
            pong()
    end.

sink(Count, Sum) ->
    receive
        {count, From} ->
            From ! {count, Count, Sum},
            sink(0, 0);
        I ->
            sink(Count + 1, Sum + I)
    end.

%% On node a: RoundTrips round trips to `pong` on NodeB, one after another.
%% Result: the sum of the replies (1 + 2 + ... + RoundTrips).
remote_ping_pong(NodeB, RoundTrips) ->
    timed(fun() -> remote_pings({pong, NodeB}, 0, RoundTrips, 0) end).

remote_pings(To, I, N, Sum) when I < N ->
    To ! {ping, self(), I},
    receive
        {pong, V} -> remote_pings(To, I + 1, N, Sum + V)
    end;
remote_pings(_, _, _, Sum) ->
    Sum.

%% On node a: Messages integers 0..Messages-1 to `sink` on NodeB, then
%% {count, self()}; timed until the count comes back. Result: how many the
%% sink counted (their sum is checked too).
remote_throughput(NodeB, Messages) ->
    To = {sink, NodeB},
    timed(fun() ->
                  remote_casts(To, 0, Messages),
                  To ! {count, self()},
                  receive
                      {count, Count, Sum} ->
                          Expected = Messages * (Messages - 1) div 2,
                          case Sum of
                              Expected -> Count;
                              _ -> error({wrong_sum, Sum, Expected})
                          end
                  end
          end).

remote_casts(_, N, N) ->
    ok;
remote_casts(To, I, N) ->
    To ! I,
    remote_casts(To, I + 1, N).

timed(Run) ->
    Start = erlang:monotonic_time(),
    Result = Run(),
    Elapsed = erlang:monotonic_time() - Start,
    {erlang:convert_time_unit(Elapsed, native, nanosecond) / 1.0e9, Result}.

%% par-fib: fib(N) with a process per call; a call with N >= 2 spawns the
%% calls for N-1 and N-2, which reply to its mailbox, and sends the sum to
%% its parent. Result: fib(N).
par_fib(N) ->
    Self = self(),
    spawn_link(fun() -> fib_call(N, Self) end),
    receive {fib, V} -> V end.

fib_call(N, Parent) when N < 2 ->
    Parent ! {fib, N};
fib_call(N, Parent) ->
    Self = self(),
    spawn_link(fun() -> fib_call(N - 1, Self) end),
    spawn_link(fun() -> fib_call(N - 2, Self) end),
    receive {fib, A} -> receive {fib, B} -> Parent ! {fib, A + B} end end.

%% par-tak: tak(X, Y, Z) with a process per call; a call with Y < X spawns
%% the three inner calls, which reply to its mailbox tagged with their
%% position, then spawns the outer call, which replies to its parent.
%% Result: the value.
par_tak(X, Y, Z) ->
    Self = self(),
    spawn_link(fun() -> tak_call(X, Y, Z, Self, 0) end),
    receive {tak, 0, V} -> V end.

tak_call(X, Y, Z, Parent, Position) when Y < X ->
    Self = self(),
    spawn_link(fun() -> tak_call(X - 1, Y, Z, Self, 0) end),
    spawn_link(fun() -> tak_call(Y - 1, Z, X, Self, 1) end),
    spawn_link(fun() -> tak_call(Z - 1, X, Y, Self, 2) end),
    A = receive {tak, 0, VA} -> VA end,
    B = receive {tak, 1, VB} -> VB end,
    C = receive {tak, 2, VC} -> VC end,
    spawn_link(fun() -> tak_call(A, B, C, Parent, Position) end);
tak_call(_, _, Z, Parent, Position) ->
    Parent ! {tak, Position, Z}.
