import { spawnSync } from 'node:child_process';

/*
 * The pack-objects hook in Perl, given to `perl -e`: the same client as
 * hook.cjs (keep the two in step with protocol.ts), for its start-up cost.
 * A hook starts once per fetch, and node takes ~60-100 ms of CPU to start
 * where perl without modules takes ~5 ms: with 32 clones of one commit, a
 * node hook alone can cost more than the pack-objects runs the cache saves.
 * No `use` at all (each module loaded costs a few ms): the socket calls
 * take Linux's numbers (AF_UNIX = 1, SOCK_STREAM = 1, a sockaddr_un is the
 * family then the path). Perl is where git is on Debian and its derivatives
 * (git depends on it); elsewhere the cache falls back to hook.cjs.
 *
 * argv: <socket> <ticket> git [--shallow-file ''] pack-objects …
 */
const SCRIPT = String.raw`
my ($path, $ticket, @args) = @ARGV;
my $s;
sub run_itself { exec { $args[0] } @args; print STDERR "forgesync pack cache: could not run $args[0]\n"; exit 1 }
sub fail { print STDERR "forgesync pack cache: $_[0]\n"; exit 1 }
sub put { my ($fh, $data) = @_; while (length $data) { my $n = syswrite($fh, $data); exit 1 unless defined $n; substr($data, 0, $n, '') } }
socket($s, 1, 1, 0) or run_itself();
connect($s, pack('S Z*', 1, $path)) or run_itself();
binmode STDIN; binmode STDOUT; binmode STDERR; binmode $s;
my $json = join(',', map { my $w = $_; $w =~ s/(["\\])/\\$1/g; $w =~ s/([\x00-\x1f])/sprintf('\\u%04x', ord $1)/ge; qq("$w") } @args);
my $in = '';
while (1) { my $n = sysread(STDIN, $in, 65536, length $in); fail("reading stdin: $!") unless defined $n; last unless $n }
put($s, qq({"ticket":"$ticket","args":[$json],"stdin":) . length($in) . qq(}\n) . $in);
my ($pending, $fh, $copied) = ('', undef, 0);
sub copy_to {
  my $target = shift;
  fail('no pack file was named') unless $fh;
  while ($copied < $target) {
    my $want = $target - $copied; $want = 262144 if $want > 262144;
    my $n = sysread($fh, my $chunk, $want);
    fail("reading the cached pack: $!") unless $n;
    put(\*STDOUT, $chunk); $copied += $n;
  }
}
while (1) {
  my $n = sysread($s, $pending, 65536, length $pending);
  fail("lost the connection to forgesync: $!") unless defined $n;
  last unless $n;
  my $at = 0;
  while (length($pending) - $at >= 5) {
    my ($type, $len) = unpack("x$at C N", $pending);
    last if length($pending) - $at < 5 + $len;
    my $payload = substr($pending, $at + 5, $len);
    $at += 5 + $len;
    if ($type == 4) { open($fh, '<:raw', $payload) or fail("cannot open the cached pack: $!") }
    elsif ($type == 5) { copy_to($payload + 0) }
    elsif ($type == 2) { put(\*STDERR, $payload) }
    elsif ($type == 3) { exit unpack('C', $payload) }
    else { fail("unexpected frame type $type") }
  }
  substr($pending, 0, $at, '');
}
fail('the connection ended before the pack was complete');
`;

/** The hook's command words before `<socket> <ticket>`, when a perl that can open a Unix socket is on PATH; else undefined. */
export function perlHookCommand(): string[] | undefined {
  const probe = spawnSync('perl', ['-e', 'socket(my $s, 1, 1, 0) or exit 1'], { stdio: 'ignore', timeout: 10_000 });
  return probe.status === 0 ? ['perl', '-e', SCRIPT, '--'] : undefined;
}
