#lang racket/base
;; fibra-bench's Racket peers: threads and rendezvous channels
;; (`make-channel`: Racket's channels are Concurrent ML's).
;;
;; Compiled and run by fibra-bench/src/peers/racket.rs:
;;
;;   raco make main.rkt      (compiled files redirected to the target dir)
;;   racket main.rkt <workload> name=value... runs=N
;;
;; Each workload does one warm-up run and N timed runs and prints one JSON
;; line per run: {"warmup":true,"seconds":0.0123,"result":499999500000}.
;; The harness checks every result.
;;
;; Racket threads are green threads: they all run on one OS thread (places
;; and futures, Racket's parallelism, are not used). Racket channels cannot
;; be closed: where the other peers close a channel, these programs send
;; `eof` (once per receiver).
;;
;; The `racket` group (sema-baseline, ..., symmetric-buffered) is the 2008
;; micro-benchmark of Racket's thread mailboxes (mbox-test.ss) with results
;; to check: semaphores, thread mailboxes (thread-send / thread-receive),
;; channels (make-channel) and async channels (make-async-channel,
;; unbounded), and (sleep) to switch threads.

(require racket/async-channel)

(define (usage)
  (eprintf "usage: racket main.rkt <workload> name=value... runs=N\n")
  (exit 2))

;; "pairs=10" -> (cons 'pairs 10)
(define (parse-param arg)
  (define m (regexp-match #rx"^([a-z_]+)=([0-9]+)$" arg))
  (unless m
    (error 'fibra-bench "bad parameter ~s (expected name=number)" arg))
  (cons (string->symbol (cadr m)) (string->number (caddr m))))

(define (param params name)
  (define p (assq name params))
  (unless p
    (error 'fibra-bench "missing parameter ~a" name))
  (cdr p))

;; One warm-up run, then `runs` timed runs, one JSON line each.
(define (measure runs run)
  (for ([i (in-range (add1 runs))])
    (define start (current-inexact-monotonic-milliseconds))
    (define result (run))
    (define seconds (/ (- (current-inexact-monotonic-milliseconds) start) 1000.0))
    (printf "{\"warmup\":~a,\"seconds\":~a,\"result\":~a}\n"
            (if (zero? i) "true" "false")
            (real->decimal-string* seconds)
            result)
    (flush-output)))

;; A flonum as a JSON number with 9 decimals.
(define (real->decimal-string* x)
  (define n (inexact->exact (round (* x 1e9))))
  (define s (number->string n))
  (define padded (string-append (make-string (max 0 (- 10 (string-length s))) #\0) s))
  (define k (- (string-length padded) 9))
  (string-append (substring padded 0 k) "." (substring padded k)))

;; ping-pong: `pairs` pairs of threads; each pinger puts i for i in
;; 0..round_trips-1 on `ping` and gets the ponger's reply i+1 from `pong`.
;; Result: the sum of all replies.
(define (ping-pong pairs round-trips)
  (define sums (make-channel))
  (for ([_ (in-range pairs)])
    (define ping (make-channel))
    (define pong (make-channel))
    (thread (lambda ()
              (let loop ()
                (define v (channel-get ping))
                (unless (eof-object? v)
                  (channel-put pong (add1 v))
                  (loop)))))
    (thread (lambda ()
              (let loop ([i 0] [sum 0])
                (cond
                  [(< i round-trips)
                   (channel-put ping i)
                   (loop (add1 i) (+ sum (channel-get pong)))]
                  [else
                   (channel-put ping eof)
                   (channel-put sums sum)])))))
  (for/sum ([_ (in-range pairs)]) (channel-get sums)))

;; chain: a sender thread puts 0..messages-1 into a chain of `links` relay
;; threads; the main thread gets them from the end and sums them.
(define (chain links messages)
  (define first (make-channel))
  (define last
    (for/fold ([in first]) ([_ (in-range links)])
      (define out (make-channel))
      (thread (lambda ()
                (let loop ()
                  (define v (channel-get in))
                  (channel-put out v)
                  (unless (eof-object? v)
                    (loop)))))
      out))
  (thread (lambda ()
            (for ([i (in-range messages)])
              (channel-put first i))
            (channel-put first eof)))
  (let loop ([sum 0])
    (define v (channel-get last))
    (if (eof-object? v)
        sum
        (loop (+ sum v)))))

;; fan-out: one producer thread puts 0..messages-1 on one channel that
;; `consumers` threads compete to get from, then one `eof` per consumer;
;; each consumer sums what it gets. Result: the total.
(define (fan-out consumers messages)
  (define ch (make-channel))
  (define sums (make-channel))
  (for ([_ (in-range consumers)])
    (thread (lambda ()
              (let loop ([sum 0])
                (define v (channel-get ch))
                (if (eof-object? v)
                    (channel-put sums sum)
                    (loop (+ sum v)))))))
  (thread (lambda ()
            (for ([i (in-range messages)])
              (channel-put ch i))
            (for ([_ (in-range consumers)])
              (channel-put ch eof))))
  (for/sum ([_ (in-range consumers)]) (channel-get sums)))

;; spawn-join: the main thread starts `tasks` threads (thread i stores i in
;; its slot of a vector: Racket threads return no value) and waits for each
;; in start order with `thread-wait`. Result: the sum of the slots.
(define (spawn-join tasks)
  (define results (make-vector tasks 0))
  (define threads
    (for/list ([i (in-range tasks)])
      (thread (lambda () (vector-set! results i i)))))
  (for-each thread-wait threads)
  (for/sum ([v (in-vector results)]) v))

;; ---- The `racket` group: mbox-test.ss, with results to check -----------
;; Every workload runs `n` iterations, in the threads mbox-test.ss uses; the
;; main thread waits for them with `thread-wait` and returns what they
;; stored: a count of semaphore waits or yields, or the sum of the values
;; received (asymmetric: 0..n-1; symmetric: the replies i+1 to pings i).

;; Runs (thunk) in a new thread and returns a procedure that waits for it
;; and returns the thunk's value.
(define (spawn thunk)
  (define result #f)
  (define t (thread (lambda () (set! result (thunk)))))
  (lambda ()
    (thread-wait t)
    result))

;; sema-baseline: (call-with-semaphore sema void) n times on the main thread.
(define (sema-baseline n)
  (define sema (make-semaphore 1))
  (for/fold ([count 0]) ([_ (in-range n)])
    (call-with-semaphore sema void)
    (add1 count)))

;; switch-baseline: two threads each (sleep) n times. Result: 2n.
(define (switch-baseline n)
  (define (runner)
    (for/fold ([count 0]) ([_ (in-range n)])
      (sleep)
      (add1 count)))
  (define a (spawn runner))
  (define b (spawn runner))
  (+ (a) (b)))

;; asymmetric-*: a producer thread `put`s 0..n-1, a consumer thread `get`s n
;; values and sums them (the consumer is started first, as in mbox-test.ss).
(define (asymmetric n put get)
  (define consumer
    (spawn (lambda ()
             (for/fold ([sum 0]) ([_ (in-range n)])
               (+ sum (get))))))
  (define producer
    (spawn (lambda ()
             (for ([i (in-range n)])
               (put i)))))
  (producer)
  (consumer))

;; symmetric-*: the initiator puts i on `ping` and gets the reply i+1 from
;; `pong`, n times; the responder does the converse. Result: the sum of the
;; replies.
(define (symmetric n put-ping get-ping put-pong get-pong)
  (define responder
    (spawn (lambda ()
             (for ([_ (in-range n)])
               (put-pong (add1 (get-ping)))))))
  (define initiator
    (spawn (lambda ()
             (for/fold ([sum 0]) ([i (in-range n)])
               (put-ping i)
               (+ sum (get-pong))))))
  (responder)
  (initiator))

(define (asymmetric-sema n)
  (define sema (make-semaphore 0))
  (define consumer
    (spawn (lambda ()
             (for/fold ([count 0]) ([_ (in-range n)])
               (semaphore-wait sema)
               (add1 count)))))
  (define producer
    (spawn (lambda ()
             (for ([_ (in-range n)])
               (semaphore-post sema)))))
  (producer)
  (consumer))

(define (symmetric-sema n)
  (define ping (make-semaphore 0))
  (define pong (make-semaphore 0))
  (define responder
    (spawn (lambda ()
             (for ([_ (in-range n)])
               (semaphore-wait ping)
               (semaphore-post pong)))))
  (define initiator
    (spawn (lambda ()
             (for/fold ([count 0]) ([_ (in-range n)])
               (semaphore-post ping)
               (semaphore-wait pong)
               (add1 count)))))
  (responder)
  (initiator))

;; The mailbox workloads send to a thread's own mailbox, so they set up
;; their threads by hand: the receiver must exist before anyone sends.
(define (asymmetric-mailbox n)
  (define sum #f)
  (define consumer
    (thread (lambda ()
              (set! sum (for/fold ([sum 0]) ([_ (in-range n)])
                          (+ sum (thread-receive)))))))
  (define producer
    (thread (lambda ()
              (for ([i (in-range n)])
                (thread-send consumer i)))))
  (thread-wait producer)
  (thread-wait consumer)
  sum)

;; As in mbox-test.ss, the initiator learns its peer from its own mailbox.
(define (symmetric-mailbox n)
  (define sum #f)
  (define initiator
    (thread (lambda ()
              (define peer (thread-receive))
              (set! sum (for/fold ([sum 0]) ([i (in-range n)])
                          (thread-send peer i)
                          (+ sum (thread-receive)))))))
  (define responder
    (thread (lambda ()
              (for ([_ (in-range n)])
                (thread-send initiator (add1 (thread-receive)))))))
  (thread-send initiator responder)
  (thread-wait initiator)
  (thread-wait responder)
  sum)

(define (asymmetric-channel n)
  (define ch (make-channel))
  (asymmetric n (lambda (v) (channel-put ch v)) (lambda () (channel-get ch))))

(define (symmetric-channel n)
  (define ping (make-channel))
  (define pong (make-channel))
  (symmetric n
             (lambda (v) (channel-put ping v)) (lambda () (channel-get ping))
             (lambda (v) (channel-put pong v)) (lambda () (channel-get pong))))

(define (asymmetric-buffered n)
  (define ch (make-async-channel))
  (asymmetric n (lambda (v) (async-channel-put ch v)) (lambda () (async-channel-get ch))))

(define (symmetric-buffered n)
  (define ping (make-async-channel))
  (define pong (make-async-channel))
  (symmetric n
             (lambda (v) (async-channel-put ping v)) (lambda () (async-channel-get ping))
             (lambda (v) (async-channel-put pong v)) (lambda () (async-channel-get pong))))

;; The `racket` group's workloads, by name: each takes `iterations`.
(define racket-group
  (hash "sema-baseline" sema-baseline
        "switch-baseline" switch-baseline
        "asymmetric-sema" asymmetric-sema
        "asymmetric-mailbox" asymmetric-mailbox
        "asymmetric-channel" asymmetric-channel
        "asymmetric-buffered" asymmetric-buffered
        "symmetric-sema" symmetric-sema
        "symmetric-mailbox" symmetric-mailbox
        "symmetric-channel" symmetric-channel
        "symmetric-buffered" symmetric-buffered))

(define (workload name params)
  (define (p n) (param params n))
  (case name
    [("ping-pong") (let ([a (p 'pairs)] [b (p 'round_trips)]) (lambda () (ping-pong a b)))]
    [("chain") (let ([a (p 'links)] [b (p 'messages)]) (lambda () (chain a b)))]
    [("fan-out") (let ([a (p 'consumers)] [b (p 'messages)]) (lambda () (fan-out a b)))]
    [("spawn-join") (let ([a (p 'tasks)]) (lambda () (spawn-join a)))]
    [else
     (define run (hash-ref racket-group name #f))
     (unless run
       (error 'fibra-bench "unknown workload ~s" name))
     (let ([n (p 'iterations)]) (lambda () (run n)))]))

(module+ main
  (define args (vector->list (current-command-line-arguments)))
  (when (null? args)
    (usage))
  (define params (map parse-param (cdr args)))
  (measure (param params 'runs) (workload (car args) params)))
