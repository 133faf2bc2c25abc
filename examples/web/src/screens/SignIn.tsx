// Sign in and sign up: both answer a bearer token, which App keeps for the session.
import { useMutation } from "@apollo/client/react";
import { useState } from "react";

import { graphql } from "../gql";
import { ErrorNote } from "./ErrorNote";

const SignInMutation = graphql(`
  mutation SignIn($login: String!, $password: String!) {
    signIn(login: $login, password: $password) {
      token
    }
  }
`);

const SignUpMutation = graphql(`
  mutation SignUp($input: SignUpInput!) {
    signUp(input: $input) {
      token
    }
  }
`);

const SignOutMutation = graphql(`
  mutation SignOut {
    signOut
  }
`);

export function SignIn({ onSignedIn }: { onSignedIn: (token: string) => void }) {
  const [signIn, signingIn] = useMutation(SignInMutation);
  const [signUp, signingUp] = useMutation(SignUpMutation);
  const [creating, setCreating] = useState(false);
  const [form, setForm] = useState({ login: "", password: "", firstname: "", lastname: "", email: "" });
  const field = (name: keyof typeof form, label: string, type = "text") => (
    <label>
      {label}
      <input type={type} value={form[name]} onChange={(event) => setForm({ ...form, [name]: event.target.value })} />
    </label>
  );
  return (
    <form
      className="stack narrow"
      onSubmit={async (event) => {
        event.preventDefault();
        // A refusal is shown from the hook's `error` below: a wrong login or password is one
        // UNAUTHENTICATED error, invalid input BAD_USER_INPUT naming the field.
        const token = creating
          ? await signUp({ variables: { input: form } }).then((r) => r.data?.signUp.token, () => null)
          : await signIn({ variables: { login: form.login, password: form.password } }).then(
              (r) => r.data?.signIn.token,
              () => null,
            );
        if (token) onSignedIn(token);
      }}
    >
      <h1>{creating ? "Sign up" : "Sign in"}</h1>
      {field("login", "Login")}
      {field("password", "Password", "password")}
      {creating && (
        <>
          {field("firstname", "First name")}
          {field("lastname", "Last name")}
          {field("email", "Email", "email")}
        </>
      )}
      <button type="submit" disabled={signingIn.loading || signingUp.loading}>
        {creating ? "Sign up" : "Sign in"}
      </button>
      <ErrorNote error={creating ? signingUp.error : signingIn.error} />
      <button type="button" className="link" onClick={() => setCreating(!creating)}>
        {creating ? "I have an account" : "Create an account"}
      </button>
    </form>
  );
}

/** Revokes the token on the gateway (its sockets close everywhere), then forgets it here. */
export function SignOutButton({ onSignedOut }: { onSignedOut: () => void }) {
  const [signOut, { loading }] = useMutation(SignOutMutation);
  return (
    <button type="button" className="link" disabled={loading} onClick={() => void signOut().finally(onSignedOut)}>
      Sign out
    </button>
  );
}
