package redisserver

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

const (
	// startAttempts bounds the retries after losing a port race.
	startAttempts = 5
	// readyTimeout bounds how long a fresh server may take to answer PING.
	readyTimeout = 10 * time.Second
	// stopGrace is how long Stop waits after SIGTERM before SIGKILL.
	stopGrace = 5 * time.Second
	// logName is the server's log file inside its directory.
	logName = "redis.log"
	// stderrName catches what redis-server prints before its log is open,
	// such as complaints about invalid arguments.
	stderrName = "stderr.log"
)

// errPortClash marks a start attempt that failed because the port was taken.
var errPortClash = errors.New("redisserver: port already in use")

// Server is a redis-server process listening on 127.0.0.1.
type Server struct {
	// Addr is the "127.0.0.1:port" address clients connect to.
	Addr string
	// Port is the TCP port the server listens on.
	Port int
	// Dir is the server's private working directory, holding its log.
	Dir string

	bin  string    // redis-server binary
	conf string    // config file given before all arguments (a sentinel's), or ""
	args []string  // extra arguments, replayed by Restart
	env  []string  // extra environment variables, replayed by Restart
	cmd  *exec.Cmd // running process, nil once stopped or killed
}

// StartServer starts a redis-server without persistence on a free loopback
// port and waits until it answers PING. The extra args are appended to the
// command line, so they override the defaults.
func StartServer(args ...string) (*Server, error) {
	return startServer(FreePort, args)
}

// startServer starts a server in a new temporary directory on a port chosen
// by pick, choosing another port whenever the previous one was taken.
func startServer(pick func() (int, error), args []string) (*Server, error) {
	return startServerConf(pick, "", args)
}

// startServerEnv is StartServer for a server with extra environment
// variables.
func startServerEnv(env, args []string) (*Server, error) {
	return startServerFull(FreePort, "", env, args)
}

// startServerConf is startServer for a server that reads the config file
// named conf (written into its directory) before its arguments.
func startServerConf(pick func() (int, error), conf string, args []string) (*Server, error) {
	return startServerFull(pick, conf, nil, args)
}

// startServerFull starts a server on a port chosen by pick, reading conf
// (if set) and with env added to its environment.
func startServerFull(pick func() (int, error), conf string, env, args []string) (*Server, error) {
	bin, err := ServerBinary()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "redistest-")
	if err != nil {
		return nil, fmt.Errorf("redisserver: %w", err)
	}
	s := &Server{Dir: dir, bin: bin, args: append([]string(nil), args...), env: env}
	if conf != "" {
		s.conf = filepath.Join(dir, "redis.conf")
		if err := os.WriteFile(s.conf, []byte(conf), 0o600); err != nil {
			_ = os.RemoveAll(dir)
			return nil, fmt.Errorf("redisserver: %w", err)
		}
	}
	for range startAttempts {
		port, perr := pick()
		if perr != nil {
			err = perr
			break
		}
		s.Port = port
		s.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		if err = s.launch(); !errors.Is(err, errPortClash) {
			break
		}
	}
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	return s, nil
}

// Stop shuts the server down (SIGTERM, then SIGKILL after 5 s), reaps the
// process and removes its directory. Calling Stop again is harmless.
func (s *Server) Stop() error {
	var err error
	if s.cmd != nil {
		err = terminate(s.cmd, stopGrace)
		err = errors.Join(err, s.reap())
	}
	return errors.Join(err, os.RemoveAll(s.Dir))
}

// Kill ends the server abruptly with SIGKILL and reaps it, keeping its
// directory so that Restart can bring it back, like a crashed server.
func (s *Server) Kill() error {
	if s.cmd == nil {
		return nil
	}
	return errors.Join(kill(s.cmd), s.reap())
}

// Restart kills the server and starts it again on the same port, in the same
// directory and with the same arguments. Data does not survive, since
// persistence is off. It retries briefly in case another process grabbed the
// port in between.
func (s *Server) Restart() error {
	if err := s.Kill(); err != nil {
		return err
	}
	var err error
	for range startAttempts {
		if err = s.launch(); !errors.Is(err, errPortClash) {
			return err
		}
		time.Sleep(100 * time.Millisecond)
	}
	return err
}

// reap waits for the killed process. An exit status caused by our own signal
// is expected and therefore not reported.
func (s *Server) reap() error {
	err := s.cmd.Wait()
	s.cmd = nil
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return nil
	}
	return err
}

// launch runs redis-server on s.Port and waits until it is ready. On failure
// the process is gone again and errPortClash tells whether to retry.
func (s *Server) launch() error {
	logPath := filepath.Join(s.Dir, logName)
	// Redis appends to its log, so earlier runs' messages (say, a previous
	// port clash) must not be mistaken for this run's.
	var logOffset int64
	if fi, err := os.Stat(logPath); err == nil {
		logOffset = fi.Size()
	}
	argv := append([]string{
		"--port", strconv.Itoa(s.Port),
		"--bind", "127.0.0.1",
		"--save", "",
		"--appendonly", "no",
		"--dir", s.Dir,
		"--logfile", logPath,
		"--protected-mode", "no",
	}, s.args...)
	if s.conf != "" {
		argv = append([]string{s.conf}, argv...)
	}

	// An *os.File (not a pipe) keeps os/exec from starting copy goroutines.
	stderr, err := os.Create(filepath.Join(s.Dir, stderrName))
	if err != nil {
		return fmt.Errorf("redisserver: %w", err)
	}
	defer stderr.Close()
	cmd := exec.Command(s.bin, argv...)
	if s.env != nil {
		cmd.Env = append(os.Environ(), s.env...)
	}
	cmd.Dir = s.Dir
	cmd.Stdout = stderr
	cmd.Stderr = stderr
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("redisserver: start %s: %w", s.bin, err)
	}
	s.cmd = cmd
	if err := s.waitReady(logOffset); err != nil {
		_ = s.Kill()
		return err
	}
	return nil
}

// waitReady polls until the server answers PING, fails fast when the process
// exits or logs a bind failure, and includes the log tail on timeout.
func (s *Server) waitReady(logOffset int64) error {
	pid := s.cmd.Process.Pid
	deadline := time.Now().Add(readyTimeout)
	for {
		// Check for exit before reading the log: a server that died has
		// already written why, so the log check cannot miss the reason.
		dead := exited(pid)
		if s.logShowsClash(logOffset) {
			return fmt.Errorf("%w: %s", errPortClash, s.Addr)
		}
		if dead {
			return fmt.Errorf("redisserver: redis-server on %s exited during startup:\n%s", s.Addr, s.logTail())
		}
		err := ping(s.Addr, pid)
		if err == nil {
			return nil
		}
		if errors.Is(err, errPortClash) {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("redisserver: redis-server on %s not ready after %v: %v\n%s", s.Addr, readyTimeout, err, s.logTail())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// logShowsClash reports whether the log, from offset on, shows a bind
// failure.
func (s *Server) logShowsClash(offset int64) bool {
	data, err := os.ReadFile(filepath.Join(s.Dir, logName))
	if err != nil || int64(len(data)) <= offset {
		return false
	}
	data = data[offset:]
	return bytes.Contains(data, []byte("Address already in use")) ||
		bytes.Contains(data, []byte("Failed listening on port"))
}

// logTail returns the last lines of the server's log and captured stderr,
// which usually say why it did not come up.
func (s *Server) logTail() string {
	var b strings.Builder
	for _, name := range []string{logName, stderrName} {
		data, err := os.ReadFile(filepath.Join(s.Dir, name))
		if err != nil || len(data) == 0 {
			continue
		}
		lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
		lines = lines[max(0, len(lines)-20):]
		fmt.Fprintf(&b, "--- %s ---\n%s\n", name, strings.Join(lines, "\n"))
	}
	return b.String()
}

// ping sends PING over a raw RESP connection and expects +PONG. It then asks
// INFO for the process id, because after losing a port race another server
// would answer PING just as happily.
func ping(addr string, pid int) error {
	conn, err := net.DialTimeout("tcp", addr, 250*time.Millisecond)
	if err != nil {
		return err
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(500 * time.Millisecond)); err != nil {
		return err
	}
	r := bufio.NewReader(conn)
	if _, err := io.WriteString(conn, "*1\r\n$4\r\nPING\r\n"); err != nil {
		return err
	}
	line, err := readLine(r)
	if err != nil {
		return err
	}
	if line != "+PONG" {
		// -LOADING and friends: not ready yet.
		return fmt.Errorf("PING: %s", line)
	}
	if _, err := io.WriteString(conn, "*2\r\n$4\r\nINFO\r\n$6\r\nserver\r\n"); err != nil {
		return err
	}
	info, err := readBulk(r)
	if err != nil {
		return err
	}
	want := "process_id:" + strconv.Itoa(pid) + "\r\n"
	if !strings.Contains(info, want) {
		return fmt.Errorf("%w: %s is served by another process", errPortClash, addr)
	}
	return nil
}

// readLine reads one CRLF-terminated RESP line without the terminator.
func readLine(r *bufio.Reader) (string, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return "", err
	}
	return strings.TrimSuffix(line, "\r\n"), nil
}

// readBulk reads a RESP bulk string reply.
func readBulk(r *bufio.Reader) (string, error) {
	line, err := readLine(r)
	if err != nil {
		return "", err
	}
	if !strings.HasPrefix(line, "$") {
		return "", fmt.Errorf("unexpected reply %q", line)
	}
	n, err := strconv.Atoi(line[1:])
	if err != nil || n < 0 {
		return "", fmt.Errorf("unexpected reply %q", line)
	}
	buf := make([]byte, n+2)
	if _, err := io.ReadFull(r, buf); err != nil {
		return "", err
	}
	return string(buf[:n]), nil
}
